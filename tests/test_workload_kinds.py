"""Workloads as one class each (harness.rig.workload.KINDS): the names the command line takes are unchanged,
each says which way its data goes, and each runs the legs (and writes the peer logs) it always did."""

from __future__ import annotations

import pytest

import harness.rig.workload as workload_module
from harness.core.errors import NetreproError
from harness.rig.workload import KINDS, ONE_WAY, WORKLOADS, Workload, run_workload, workload_kind


def _named(flag: str) -> set[str]:
    return {name for name, kind in KINDS.items() if getattr(kind, flag)}


def test_the_names_and_their_order_are_the_command_lines():
    assert WORKLOADS == ("rx", "tx", "duplex", "rr", "discard", "sock-rx", "sock-tx", "udp-rx", "udp-tx")
    assert ONE_WAY == ("rx", "tx", "discard", "sock-rx", "sock-tx", "udp-rx", "udp-tx")


def test_each_workload_says_what_it_is():
    assert _named("device_sends") == {"tx", "discard", "sock-tx", "udp-tx"}
    assert _named("two_way") == {"duplex", "rr"}
    assert _named("udp") == {"udp-rx", "udp-tx"}
    assert _named("chunked") == {"discard", "sock-rx", "sock-tx"}
    assert {n: k.peer_client for n, k in KINDS.items() if k.peer_client is not None} == {
        "rx": (), "duplex": ("-d",), "rr": ("-r",)}
    assert (KINDS["rr"].legs, _named("board_may_end")) == (2, {"rx"})


def test_an_unknown_workload_is_one_line_naming_them_all():
    with pytest.raises(NetreproError, match="unknown workload 'rxx'") as caught:
        Workload("rxx")
    assert ", ".join(WORKLOADS) in caught.value.fix
    assert workload_kind("sock-tx") is KINDS["sock-tx"]


def test_amount_in_the_users_words():
    assert Workload("discard", chunk=512).kind.amount(Workload("discard", chunk=512)) == \
        "8388608 bytes in chunks of 512"
    assert Workload("rx", seconds=4).amount() == "4 s" and Workload("tx", bytes=1000).amount() == "1000 bytes"


@pytest.mark.parametrize(("name", "leg", "log"), [
    ("rx", "_peer_client", "peer-iperf-client.csv"), ("duplex", "_peer_client", "peer-iperf-client.csv"),
    ("rr", "_peer_client", "peer-iperf-client.csv"), ("tx", "_device_client", "peer-iperf-server.csv"),
    ("discard", "_discard", "peer-discard.json"), ("sock-rx", "_socket_benchmark", "peer-sock-rx.json"),
    ("sock-tx", "_socket_benchmark", "peer-sock-tx.json"), ("udp-rx", "_udp_to_device", "peer-iperf-udp-client.csv"),
    ("udp-tx", "_udp_from_device", "peer-iperf-udp-server.csv")])
def test_each_workload_runs_its_legs_with_their_logs(monkeypatch, name, leg, log):
    calls = []
    for other in ("_peer_client", "_device_client", "_discard", "_socket_benchmark", "_udp_to_device",
                  "_udp_from_device"):
        monkeypatch.setattr(workload_module, other, lambda rig, w, *args, fn=other: calls.append((fn, w.name, args))
                            or [])
    run_workload(None, Workload(name, seconds=2, warmup_s=1))
    warm = "tx" if KINDS[name].device_sends else "rx"
    assert calls[0][1] == warm and calls[0][2][-1].startswith("warmup-")  # the warm-up leg first, its own logs
    fn, ran, args = calls[1]
    assert (fn, ran, args[-1]) == (leg, name, log)
    if fn == "_socket_benchmark":
        assert args[0] == name.removeprefix("sock-")
    if fn == "_peer_client":
        assert args[0] == list(KINDS[name].peer_client)
