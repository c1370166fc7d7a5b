"""The verdict is a pure function of the facts: judge(facts) reads them, changes nothing, depends on nothing else."""

from __future__ import annotations

import copy
import dataclasses
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from captures_gen import DEVICE_IP, Scenario, write_scenario

from harness.analysis import VERDICTS, Facts, Verdict, judge, load_capture

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

# one short capture per kind of verdict, with the link rate the verdict needs (None: unknown), and where given the
# board's own measure of its core and the stage of the link that sets the rate
SCENARIOS = {
    "window-limited": (Scenario(duration=0.4, rcv_buf=23360, rtt=0.006), None),
    "send-buffer-limited": (Scenario(duration=0.4, sender="device", client="peer", device_mss=1432, snd_buf=2864,
                                     rcv_buf=64240, rtt=0.002, peer_wscale=7), 100e6),
    "receiver-limited": (Scenario(duration=0.6, app_pause=(0.2, 0.2)), None),
    "loss-limited": (Scenario(duration=0.6, rcv_buf=2 * 1460, drop=frozenset({20, 80}), fast_retransmit=False,
                              rto=0.1), None),
    "sender-limited": (SENDER_PACED := Scenario(duration=0.4, sender="device", client="device", device_mss=536,
                                                snd_buf=4 * 536, rcv_buf=64240, peer_wscale=7, rtt=0.0004,
                                                rate_bps=10e6, send_cost=0.002), 10e6),
    # the same capture, with the board's own measure of its core saturated (device time's CPU load)
    "cpu-limited": (SENDER_PACED, 10e6, 0.97),
    "link-limited": (AT_RATE := Scenario(duration=0.4, sender="device", client="device", rcv_buf=262144,
                                         device_wscale=0, peer_wscale=7, rate_bps=20e6, rtt=0.005), 20e6),
    # the same capture (13.4 Mbit/s of goodput) judged against a 15 Mbit/s bound set by the WiFi chip's host bus, below
    # the air's (a shared medium with a bus): the goodput reaches it
    "bus-limited": (AT_RATE, 15e6, None, "bus"),
    "unknown": (Scenario(duration=0.3, sender="device", client="device", cwnd=20 * 1460, rcv_buf=1 << 20,
                         device_wscale=7, peer_wscale=7, rtt=0.0055, rate_bps=1e9), 1e9),
}


@pytest.fixture(scope="module")
def analyses(tmp_path_factory):
    folder = tmp_path_factory.mktemp("verdicts")
    return {name: load_capture(write_scenario(folder / f"{name}.pcap", sc), device_ip=DEVICE_IP, link_rate_bps=rate,
                               device_busy=extra[0] if extra else None,
                               link_stage=extra[1] if len(extra) > 1 else "link")
            for name, (sc, rate, *extra) in SCENARIOS.items()}


def test_a_busy_core_is_cpu_limited_only_when_saturated_and_nothing_else_held_it(analyses, tmp_path):
    paced = analyses["cpu-limited"]
    assert "busy 97%" in paced.verdict_reason and paced.judgement.evidence["device_busy"] == 0.97
    below = dataclasses.replace(paced.facts, device_busy=0.85)
    assert judge(below).name == "sender-limited"
    window = dataclasses.replace(analyses["window-limited"].facts, device_busy=0.99)
    assert judge(window).name == "window-limited"  # the window held the sender before the core did
    link = dataclasses.replace(analyses["link-limited"].facts, device_busy=0.99)
    assert judge(link).name == "link-limited"


def test_every_verdict_is_reached(analyses):
    assert sorted(analyses) == sorted(VERDICTS)
    for name, a in analyses.items():
        assert a.verdict == name, a.verdict_reason


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_judge_is_pure(analyses, name):
    """Same facts, same verdict; the facts are not touched; the analysis holds exactly that verdict."""
    facts = analyses[name].facts
    before = copy.deepcopy(facts)
    first, second = judge(facts), judge(facts)
    assert first == second == analyses[name].judgement
    assert first.evidence is not second.evidence  # a new record each time, nothing shared to mutate
    assert facts == before
    assert judge(before) == first  # a copy of the facts judges the same: nothing else is read


def test_facts_are_frozen(analyses):
    facts = analyses["window-limited"].facts
    for part in (facts, facts.capture, facts.connection, facts.transfer, facts.bounds, facts.connection.handshake):
        field = dataclasses.fields(part)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(part, field, None)


def test_the_verdict_follows_the_facts_alone(analyses):
    """Change one fact by hand and the verdict changes with it: a 0.3 s zero window makes the receiver the limit."""
    facts = analyses["window-limited"].facts
    assert facts.transfer is not None
    closed = dataclasses.replace(facts, transfer=dataclasses.replace(facts.transfer, zero_window_s=0.3))
    verdict = judge(closed)
    assert verdict.name == "receiver-limited" and "closed 0.30 s" in verdict.reason
    assert judge(facts).name == "window-limited"


def test_no_facts_no_verdict():
    assert judge(Facts(path="none.pcap")) == Verdict("unknown", "")
