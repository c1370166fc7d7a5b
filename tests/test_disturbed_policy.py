"""One policy for a run the host disturbed (harness.runs.disturbed): every command's path repeats it at twice D,
and the result that stands records the policy, the tries and why each was repeated."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import harness.runs.analyse as analyse_module
import harness.runs.plan as plan_module
import harness.studies.bisect as bisect_module
import harness.studies.compare as compare_module
import harness.studies.one_run as one_run_module
from harness.analysis.summary import AnalysisSummary
from harness.cli.main import main
from harness.core.progress import Progress
from harness.link import LinkSpec
from harness.rig.devicetime import DeviceTime, TimeChoice
from harness.rig.platform import load_platform
from harness.rig.workload import Workload
from harness.runs.analyse import Analyser, MeasuredRun
from harness.runs.disturbed import DisturbedPolicy, disturbance, measure_trusted, still_disturbed
from harness.runs.plan import Configuration, RunPlan
from harness.runs.result import RunResult
from harness.studies.bisect import Bisection, Criterion
from harness.studies.compare import compare

LAGGED = "the host fell behind the board by 41 ms"
FIRMWARE = SimpleNamespace(profile=SimpleNamespace(name="p"), lwip_version="2.1.3", stand_ins=(), warnings=(),
                           apps=(), lwip_ram=None, key="k", rebuilt=False)


def _fake_measure(disturbed_tries: int):
    """RunPlan.measure's stand-in: the host disturbs the first `disturbed_tries` runs of each folder."""

    def measure(plan: RunPlan, run_dir: Path, progress: Progress | None = None) -> MeasuredRun:
        tries = run_dir.name.count("-slower")
        run_dir.mkdir(exist_ok=True)
        result = RunResult(platform=plan.platform.name, profile=plan.firmware.profile.name, lwip_version="2.1.3",
                           link=plan.link, workload=plan.workload.describe(), run_dir=str(run_dir),
                           capture="", console_log="", device="10.0.0.2", status="passed")
        result.throughput_mbps = 20.0 + tries
        lagged = tries < disturbed_tries
        result.time = DeviceTime("device", dilation=plan.time.dilation, model_mips=plan.time.model_mips,
                                 host_mips=plan.time.host_mips, host_lagged=lagged,
                                 max_lag_ms=41.0 if lagged else 0.0).as_dict()
        result.save()
        return MeasuredRun(result, [], Progress(quiet=True))

    return measure


@pytest.fixture
def disturbed(monkeypatch):
    """Every run's first try is disturbed, its repeat is not; no capture to analyse."""
    monkeypatch.setattr(plan_module.RunPlan, "measure", _fake_measure(1))
    monkeypatch.setattr(analyse_module, "analyse_run", lambda result, *_: SimpleNamespace(connections=[]))
    monkeypatch.setattr(analyse_module, "plot_run", lambda *_: None)


def _device_time() -> DeviceTime:
    return DeviceTime("device", dilation=2.0, model_mips=600.0, host_mips=300.0)


def _plan() -> RunPlan:
    return RunPlan(load_platform("openmv-n6"), FIRMWARE, LinkSpec(), Workload("rx", seconds=1), time=_device_time())


def _expect_repeated(run_dir: Path) -> dict:
    """The repeat's result.json: the run the host disturbed replaced, the policy and why it was repeated."""
    saved = json.loads((run_dir.with_name(run_dir.name + "-slower") / "result.json").read_text())
    assert saved["throughput_mbps"] == 21.0 and saved["time"]["dilation"] == 4.0
    assert saved["disturbed_policy"] == DisturbedPolicy().as_dict()
    assert saved["repeats"] == [{"run_dir": str(run_dir), "figure": 20.0, "dilation": 2.0, "why": LAGGED}]
    assert saved["replaced"] == saved["repeats"][-1]
    return saved


def test_execute_repeats_a_disturbed_run_the_plugin_and_sweep_path(tmp_path, disturbed):
    result = _plan().execute(tmp_path / "r-1")
    assert result.run_dir == str(tmp_path / "r-1-slower") and result.repeats[0]["why"] == LAGGED
    _expect_repeated(tmp_path / "r-1")


def test_start_repeats_a_disturbed_run_the_reproduce_and_sensitivity_path(tmp_path, disturbed):
    with Analyser() as analyser:
        result = _plan().start(tmp_path / "r-1", analyser).result()
    assert result.throughput_mbps == 21.0
    _expect_repeated(tmp_path / "r-1")


def test_an_undisturbed_run_is_not_repeated_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(plan_module.RunPlan, "measure", _fake_measure(0))
    measured = measure_trusted(_plan(), tmp_path / "r-1")
    saved = json.loads((tmp_path / "r-1" / "result.json").read_text())
    assert (saved["repeats"], saved["replaced"], saved["disturbed_policy"]) == ([], None, DisturbedPolicy().as_dict())
    assert measured.result.run_dir == str(tmp_path / "r-1") and not (tmp_path / "r-1-slower").exists()


def test_the_policy_stops_after_its_tries_and_the_last_run_stands_still_marked(tmp_path, monkeypatch):
    monkeypatch.setattr(plan_module.RunPlan, "measure", _fake_measure(9))
    monkeypatch.setattr(analyse_module, "analyse_run", lambda result, *_: SimpleNamespace(connections=[]))
    monkeypatch.setattr(analyse_module, "plot_run", lambda *_: None)
    measured = DisturbedPolicy(tries=3).measure(_plan(), tmp_path / "r-1")
    assert measured.result.run_dir == str(tmp_path / "r-1-slower-slower") and measured.result.time["host_lagged"]
    assert [r["dilation"] for r in measured.result.repeats] == [2.0, 4.0]
    assert measured.result.disturbed_policy["tries"] == 3


def test_run_repeats_a_disturbed_run(tmp_path, disturbed, monkeypatch, capsys):
    monkeypatch.setattr(one_run_module, "build_firmware", lambda *_: FIRMWARE)
    monkeypatch.setattr(Configuration, "resolve", lambda self, *_: SimpleNamespace(profile=SimpleNamespace(name="p")))
    monkeypatch.setattr(TimeChoice, "for_platform", lambda self, *_: _device_time())
    assert main(["run", "openmv-n6", "--workload", "rx", "--seconds", "1", "--out", str(tmp_path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["repeats"][0]["why"] == LAGGED
    _expect_repeated(Path(document["repeats"][0]["run_dir"]))


def test_compare_repeats_a_disturbed_run(tmp_path, disturbed, monkeypatch):
    monkeypatch.setattr(compare_module, "build_firmware", lambda *_: FIRMWARE)
    monkeypatch.setattr(compare_module, "lwip_tree", lambda path: tmp_path)
    monkeypatch.setattr(Configuration, "resolve",
                        lambda self, *_: SimpleNamespace(profile=SimpleNamespace(name=self.lwip)))
    monkeypatch.setattr(TimeChoice, "for_platform", lambda self, *_: _device_time())
    document = compare("openmv-n6", [Configuration("a"), Configuration("b")], LinkSpec(), Workload("rx", seconds=1),
                       repeats=1, out=tmp_path)
    for config in document["configurations"]:
        for run_dir in config["run_dirs"]:
            _expect_repeated(Path(run_dir))


def test_bisect_repeats_a_disturbed_run(tmp_path, disturbed, monkeypatch):
    @contextlib.contextmanager
    def prepare(repo, commit, platform):
        yield tmp_path, SimpleNamespace(name="p")

    monkeypatch.setattr(bisect_module, "build_firmware", lambda *_: FIRMWARE)
    bisection = Bisection(repo=None, good="g", bad="b", platform=load_platform("openmv-n6"),
                          source=SimpleNamespace(prepare=prepare), link=LinkSpec(), workload=Workload("rx", seconds=1),
                          criterion=Criterion(min_mbps=10.0), folder=tmp_path, time=_device_time())
    step = bisection._try("c0ffee", "a commit", 1, {})
    assert step.throughput_mbps == 21.0, step
    _expect_repeated(Path(step.run_dir))


def test_no_command_runs_a_plan_around_the_policy():
    """Only harness/runs calls RunPlan.measure (one try, whether or not the host disturbed it)."""
    harness = Path(__file__).resolve().parent.parent / "harness"
    around = [str(p.relative_to(harness)) for p in harness.rglob("*.py")
              if p.parent.name != "runs" and ".measure(" in p.read_text()]
    assert not around, around



def test_run_checks_the_repeat_against_a_baseline_and_names_its_folder(tmp_path, disturbed, monkeypatch, capsys):
    """The baseline check is of the run that stands (the repeat): its file and its line name the repeat's folder."""
    monkeypatch.setattr(one_run_module, "build_firmware", lambda *_: FIRMWARE)
    monkeypatch.setattr(Configuration, "resolve", lambda self, *_: SimpleNamespace(profile=SimpleNamespace(name="p")))
    monkeypatch.setattr(TimeChoice, "for_platform", lambda self, *_: _device_time())
    monkeypatch.setattr(one_run_module, "_comparable_baseline", lambda request: {"path": "b.json"})
    monkeypatch.setattr(one_run_module, "compare_to_baseline",
                        lambda result, *_: [f"throughput {result.throughput_mbps}"])
    code = main(["run", "openmv-n6", "--workload", "rx", "--seconds", "1", "--out", str(tmp_path), "--against", "b"])
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert code == 1, err
    (first,) = [d for d in tmp_path.iterdir() if not d.name.endswith("-slower")]
    folder = f"{first}-slower"
    assert json.loads((Path(folder) / "baseline-check.json").read_text())["failures"] == ["throughput 21.0"]
    assert f"baseline b: 1 difference (b.json); run folder {folder}" in lines, lines


def _device_run(tmp_path: Path, handed: int = 100, counted: dict[str, int] | None = None, paced: float = 0.0,
                retransmissions: int = 0, link: LinkSpec | None = None, workload: str = "rx") -> MeasuredRun:
    """A finished device-time run on time by its clock: `handed` frames the link gave the device, the driver's
    counters `counted`, the capture's sender_paced share and retransmissions (analysed when asked)."""
    result = RunResult(platform="openmv-n6", profile="p", lwip_version="2.1.3", link=link or LinkSpec(),
                       workload={"name": workload}, run_dir=str(tmp_path), capture="", console_log="",
                       device="10.0.0.2", status="passed", time=_device_time().as_dict(),
                       link_counters={"to_device": {"frames_out": handed, "dropped": {"loss": 0}}},
                       device_stats=counted if counted is not None else {"nic.rx_frames": handed})
    measured = MeasuredRun(result, [], Progress(quiet=True))
    measured._analysis = SimpleNamespace()  # what capture_analysis made: the summary below is what is read
    result.analysis = AnalysisSummary.from_dict({"retransmissions": retransmissions, "pause_shares": {
        "busy": 1 - paced, "window": 0.0, "ack_wait": 0.0, "sender_paced": paced}})
    return measured


def test_frames_the_nic_lost_without_counting_them_are_a_disturbance(tmp_path):
    assert disturbance(_device_run(tmp_path)) is None
    why = disturbance(_device_run(tmp_path, handed=103, counted={"nic.rx_frames": 100}, retransmissions=4))
    assert why is not None and "the board's NIC lost 3 frames the link handed it" in why and "resent 4" in why
    # nothing resent: the frames were still on their way when the board's counters were read
    assert disturbance(_device_run(tmp_path, handed=101, counted={"nic.rx_frames": 100})) is None
    # losses the driver counted (its FIFO full, no pbuf) are the board's own: not the host's
    counted = {"nic.rx_frames": 100, "nic.rx_dropped_fifo": 2, "nic.rx_no_pbuf": 1}
    assert disturbance(_device_run(tmp_path, handed=103, counted=counted, retransmissions=4)) is None
    assert disturbance(_device_run(tmp_path, handed=103, counted={}, retransmissions=4)) is None  # no counters
    # UDP and the board's own sending are not judged by what the peer resends
    lossy = {"handed": 103, "counted": {"nic.rx_frames": 100}, "retransmissions": 4}
    assert disturbance(_device_run(tmp_path, workload="udp-rx", **lossy)) is None
    assert disturbance(_device_run(tmp_path, workload="sock-tx", **lossy)) is None


def test_a_peer_sender_the_host_starved_over_a_lossless_wire_is_a_disturbance(tmp_path):
    why = disturbance(_device_run(tmp_path, paced=0.03))
    assert why is not None and "starved the peer's sender: it paused on its own 3.0% of the transfer" in why
    assert disturbance(_device_run(tmp_path, paced=0.019)) is None  # within SENDER_PACED_SHARE
    assert disturbance(_device_run(tmp_path, paced=0.03, retransmissions=4)) is None  # a recovery's pauses
    assert disturbance(_device_run(tmp_path, paced=0.03, workload="tx")) is None  # the board's own pace
    air = LinkSpec.from_preset({"rtt": "5ms", "medium": "shared", "phy_rate": "46mbit"})
    assert disturbance(_device_run(tmp_path, paced=0.03, link=air)) is None  # the air's turns make gaps


def test_a_run_still_disturbed_after_its_repeat_says_why(tmp_path, monkeypatch):
    def measure(plan: RunPlan, run_dir: Path, progress: Progress | None = None) -> MeasuredRun:
        run_dir.mkdir(exist_ok=True)
        measured = _device_run(run_dir, handed=105, counted={"nic.rx_frames": 100}, retransmissions=5)
        measured.result.time = plan.time.as_dict()
        return measured

    monkeypatch.setattr(plan_module.RunPlan, "measure", measure)
    monkeypatch.setattr(analyse_module, "plot_run", lambda *_: None)
    monkeypatch.setattr(analyse_module, "retime_peer_figures", lambda *_: None)
    result = measure_trusted(_plan(), tmp_path / "r-1").result
    assert result.run_dir == str(tmp_path / "r-1-slower") and "lost 5 frames" in result.repeats[0]["why"]
    assert "lost 5 frames" in result.disturbed and still_disturbed(result)
    saved = json.loads((tmp_path / "r-1-slower" / "result.json").read_text())
    assert saved["disturbed"] == result.disturbed and saved["disturbed_policy"]["repeat_when"] == "disturbed"
