"""A user's own report file: found by path, checked against its one format (with file:line), its paths resolved
against its folder, its [cpu] and [links] applied, and written from a few facts by `report new`."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import RUN_PLOT_FILES, assert_one_line_error, netrepro_cli

from harness.analysis import AnalysisSummary
from harness.analysis.plots import PLOTS_ENV
from harness.core.errors import NetreproError
from harness.rig.devicetime import TimeChoice
from harness.rig.workload import WORKLOADS
from harness.runs.result import RunResult
from harness.studies.claims import CHECKS, DECLARED
from harness.studies.report_check import check_report, key_lines
from harness.studies.report_file import load_report, report_inputs, report_names, report_platform
from harness.studies.report_page import PAGE_LIMIT_BYTES
from harness.studies.report_schema import SCHEMA_PATH, report_schema, schema_text
from harness.studies.reproduce import case_setup
from harness.studies.sensitivity import sensitivity

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_PORT = ROOT / "docs" / "examples" / "port" / "lwipopts.h"

SMALL = """\
/* a port's own lwipopts.h: four segments of window */
#define TCP_MSS         1460
#define TCP_WND         (4 * TCP_MSS)
#define TCP_SND_BUF     (4 * TCP_MSS)
#define MEM_SIZE        (32 * 1024)
#define PBUF_POOL_SIZE  16
"""

REPORT = """\
report = "my-board"
title = "My board: TCP receive before and after a window change"
platform = "openmv-n6"
source = "a mail from a user"
seconds = 2
repeats = 1
stub_headers = ["py/mpconfig.h"]

[cpu]
part = "STM32F767 (Cortex-M7)"
mips = 400
provenance = "assumed"
why = "a 216 MHz M7 dual-issues some of lwIP's code"
range = [216, 432]

[links.office]
rtt = "2ms"
rate = "50mbit"
note = "the report's office LAN"

[[inputs]]
name = "office RTT"
value = 2
unit = "ms"
provenance = "report"
source = "the mail: ping 2 ms"
sets = "report: links.office.rtt"

[[cases]]
case = "before"
profile = "port/lwipopts.h"
link = "office"
workload = "rx"
claim = { window = 11680, mss = 1460 }

[[cases]]
case = "after"
profile = "small/lwipopts.h"
link = "office"
workload = "rx"
claim = { window = 5840, verdict = "window-limited", slower_than = { case = "before", factor = 0.9 } }
"""


def user_folder(tmp_path: Path, text: str = REPORT) -> Path:
    """A report and its two lwipopts.h in a folder of their own, outside the repository: the example port's
    (which needs a stub header) and a small one."""
    (tmp_path / "port").mkdir()
    shutil.copy(EXAMPLE_PORT, tmp_path / "port" / "lwipopts.h")
    (tmp_path / "small").mkdir()
    (tmp_path / "small" / "lwipopts.h").write_text(SMALL)
    (tmp_path / "my-board.toml").write_text(text)
    return tmp_path / "my-board.toml"


# ------------------------------------------------------------------ the format


def test_the_published_schema_is_the_one_the_checker_uses():
    assert SCHEMA_PATH.read_text() == schema_text(), "run: ./netrepro report schema > reports/report.schema.json"
    case = report_schema()["properties"]["cases"]["items"]
    assert set(case["properties"]["claim"]["properties"]) == set(CHECKS) | {DECLARED}  # the checks, and why the
                                                                                      # claim holds by construction
    assert case["properties"]["workload"]["enum"] == list(WORKLOADS)


@pytest.mark.parametrize("name", report_names())
def test_every_shipped_report_passes_the_check(name):
    problems = check_report(ROOT / "reports" / f"{name}.toml")
    assert [p.text() for p in problems if p.severity == "error"] == []


def test_key_lines_follow_tables_arrays_and_inline_tables():
    lines = key_lines(REPORT)
    text = REPORT.splitlines()
    assert text[lines[("cpu", "mips")] - 1] == "mips = 400"
    assert text[lines[("cases", 1, "profile")] - 1] == 'profile = "small/lwipopts.h"'
    assert text[lines[("cases", 1, "claim", "verdict")] - 1].startswith("claim = {")
    assert text[lines[("links", "office", "rate")] - 1] == 'rate = "50mbit"'
    assert lines[("inputs", 0)] < lines[("inputs", 0, "sets")]


# ------------------------------------------------------------------ check: one line a problem, with its line


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize(("change", "needle", "message"), [
    (('workload = "rx"\nclaim = { window = 5840', 'workload = "rx"\nprofil = "x"\nclaim = { window = 5840'),
     'profil = "x"', "case 'after' has unknown key profil; did you mean profile?"),
    (('profile = "small/lwipopts.h"', 'profile = "smal/lwipopts.h"'), 'profile = "smal',
     "case 'after': lwIP options file"),
    (('link = "office"\nworkload = "rx"\nclaim = { window = 11680', 'link = "wifi6"\nworkload = "rx"\nclaim = '
      '{ window = 11680'), 'link = "wifi6"', "link 'wifi6', which neither platform openmv-n6 nor the report's"),
    (('case = "before", factor', 'case = "befor", factor'), 'case = "befor"', "compares with case 'befor'"),
    (('case = "after"', 'case = "before"'), 'case = "before"\nprofile = "small', "is named twice"),
    (("mips = 400", "mips = 500"), "range = [216, 432]", "500 MIPS, outside its range"),
    (("mips = 400", "mips = 400\nclock_mhz = 216"), "[cpu]", "[cpu] gives both clock_mhz and ipc, or mips"),
    (('rate = "50mbit"', 'rate = "50 apples"'), "[links.office]",
     "link preset 'office': bad link preset rate '50 apples'"),
    (('workload = "rx"\nclaim = { window = 5840', 'workload = "rr"\nclaim = { window = 5840'), 'workload = "rr"',
     "does not say which one"),
    (('platform = "openmv-n6"', 'platform = "openmv-n7"'), "platform =", "unknown platform 'openmv-n7'"),
    (('seconds = 2', 'seconds = -2'), "seconds = -2", "the report has seconds -2"),
    (('repeats = 1', 'repeats = 1\n[oops'), "[oops", "not valid TOML"),
    (('provenance = "report"\nsource = "the mail: ping 2 ms"', 'provenance = "chosen"\nwhy = "makes it window-'
      'limited"\ncases = ["before", "befor"]'), 'cases = ["before"', "input 'office RTT' is chosen for unknown case "
                                                                    "'befor'"),
    (('workload = "rx"\nclaim = { window = 5840', 'workload = "rx"\nfigure_of = "nobody"\nclaim = { window = 5840'),
     'figure_of = "nobody"', "case 'after' gives figure_of 'nobody', which the report does not have"),
    (('workload = "rx"\nclaim = { window = 11680', 'workload = "rx"\nfigure_of = "after"\nclaim = { window = 11680'),
     'figure_of = "after"', "case 'before' gives figure_of 'after', which comes after it"),
    (('workload = "rx"\nclaim = { window = 5840', 'workload = "rx"\nfigure_of = "after"\nclaim = { window = 5840'),
     'figure_of = "after"', "case 'after' gives figure_of 'after', which is itself"),
    (('workload = "rx"\nclaim = { window = 5840', 'workload = "rx"\nreport_mbps = 20\nfigure_of = "before"\n'
      'claim = { window = 5840'), 'figure_of = "before"', "gives figure_of 'before' but not the same report figure"),
    (('claim = { window = 11680, mss = 1460 }', 'claim = { by_construction = "the same profile" }'),
     "claim = { by_construction", "declares its claim by construction but checks nothing"),
])
def test_a_problem_is_named_with_its_file_and_line(tmp_path, change, needle, message):
    old, new = change
    assert old in REPORT
    text = REPORT.replace(old, new, 1)
    path = user_folder(tmp_path, text)
    if needle.startswith('case = "before"\nprofile'):  # the second of two lines alike
        line = _line_of(text, 'profile = "small') - 1
    else:
        line = _line_of(text, needle.split("\n")[0])
    errors = [p for p in check_report(path) if p.severity == "error"]
    assert errors, text
    assert message in errors[0].text(), errors[0].text()
    assert errors[0].line == line, (errors[0].text(), line)
    assert errors[0].fix, "a problem comes with its fix"


def test_a_figure_of_with_the_same_figure_and_a_declared_claim_pass_the_check(tmp_path):
    text = (REPORT.replace('workload = "rx"\nclaim = { window = 11680', 'workload = "rx"\nreport_mbps = 40\n'
                           'claim = { window = 11680', 1)
            .replace('workload = "rx"\nclaim = { window = 5840', 'workload = "rx"\nreport_mbps = 40\n'
                     'figure_of = "before"\nclaim = { by_construction = "the window is the profile\'s", window = 5840'))
    assert [p.text() for p in check_report(user_folder(tmp_path, text)) if p.severity == "error"] == []


def test_check_exits_1_on_an_error_and_prints_file_line(tmp_path):
    path = user_folder(tmp_path, REPORT.replace('link = "office"', 'link = "office"\ncolour = "red"', 1))
    proc = netrepro_cli("report", "check", str(path))
    assert proc.returncode == 1, proc.stderr
    line = _line_of(path.read_text(), 'colour = "red"')
    assert f"{path}:{line}: error: case 'before' has unknown key colour" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == f"{path}: 1 error"
    as_json = json.loads(netrepro_cli("report", "check", str(path), "--json").stdout)
    assert as_json["ok"] is False and as_json["problems"][0]["line"] == line
    missing = netrepro_cli("report", "check", str(tmp_path / "nope.toml"))
    assert missing.returncode == 1 and "does not exist" in missing.stderr


def test_warnings_are_printed_and_do_not_fail(tmp_path):
    text = REPORT.replace('source = "a mail from a user"\n', "").replace('source = "the mail: ping 2 ms"',
                                                                          'source = ""')
    path = user_folder(tmp_path, text)
    proc = netrepro_cli("report", "check", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning: the report names no source for its figures" in proc.stdout
    empty = _line_of(text, 'source = ""')
    assert f"{path}:{empty}: warning: input 'office RTT'" in proc.stdout
    assert proc.stdout.strip().endswith("ok, 2 warnings")
    (tmp_path / "b").mkdir()
    bare = REPORT.split("[[inputs]]")[0] + "[[cases]]" + REPORT.split("[[cases]]", 1)[1]
    no_inputs = user_folder(tmp_path / "b", bare)
    assert "lists no [[inputs]]" in netrepro_cli("report", "check", str(no_inputs)).stdout


# ------------------------------------------------------------------ loading: paths, [cpu], [links]


def test_a_report_file_is_read_from_any_folder_with_its_paths_resolved(tmp_path, monkeypatch):
    path = user_folder(tmp_path)
    monkeypatch.chdir("/")
    report = load_report(str(path))
    assert report["report"] == "my-board" and report["file"] == str(path)
    before, after = report["cases"]
    assert before["profile"] == str(tmp_path / "port" / "lwipopts.h")
    assert after["profile"] == str(tmp_path / "small" / "lwipopts.h")
    assert before["stub_headers"] == after["stub_headers"] == ["py/mpconfig.h"]  # the report's, for every case


def test_the_part_and_the_links_of_a_report_model_the_board(tmp_path):
    report = load_report(str(user_folder(tmp_path)))
    setup = case_setup(report, report["cases"][0], None, TimeChoice("device"))
    time = setup.platform.time(setup.time)
    assert time.model_mips == 400 and time.dilation == pytest.approx(400 / time.host_mips)
    assert setup.link_spec().rtt_s == pytest.approx(0.002) and setup.link_spec().to_device.rate_bps == 50_000_000
    assert setup.firmware.stub_header == ("py/mpconfig.h",) and setup.firmware.lwip.endswith("port/lwipopts.h")
    cpu = report_inputs(report)[-1]
    assert cpu["value"] == 400 and cpu["unit"] == "MIPS" and cpu["provenance"] == "assumed"
    assert "STM32F767" in cpu["name"] and cpu["range"] == [216, 432]
    links = report_platform(report, {}).links
    assert links["office"]["rate"] == "50mbit" and "wifi" in links  # the report's preset beside the platform's


def test_an_unknown_report_or_a_path_that_does_not_exist_is_one_line(tmp_path):
    with pytest.raises(NetreproError, match="use one of: ethernut2, openmv-n6, openmv-rt1060, xbox, or the path"):
        load_report("my-board")
    proc = netrepro_cli("reproduce", str(tmp_path / "my-board.toml"))
    assert_one_line_error(proc, "report file", "does not exist")
    path = user_folder(tmp_path, REPORT.replace('link = "office"', 'link = "office"\nspeed = 3', 1))
    assert_one_line_error(netrepro_cli("reproduce", str(path)), f"{path}:", "unknown key speed")
    (tmp_path / "x").mkdir()
    gone = user_folder(tmp_path / "x", REPORT.replace("small/lwipopts.h", "gone/lwipopts.h"))
    assert_one_line_error(netrepro_cli("reproduce", str(gone)), "gone/lwipopts.h does not exist")


# ------------------------------------------------------------------ report new


def test_report_new_writes_a_report_that_checks_and_names_what_to_fill(tmp_path):
    user_folder(tmp_path)
    out = tmp_path / "new.toml"
    proc = netrepro_cli("report", "new", str(out), "--platform", "openmv-n6", "--before",
                        str(tmp_path / "port" / "lwipopts.h"), "--after", str(tmp_path / "small" / "lwipopts.h"),
                        "--rtt", "0.4ms", "--rate", "100mbit", "--figure", "before=40", "--figure", "after=9",
                        "--stub-header", "py/mpconfig.h", "--part", "STM32F767", "--clock-mhz", "216", "--ipc", "1")
    assert proc.returncode == 0, proc.stderr
    check = netrepro_cli("report", "check", str(out))
    assert check.returncode == 0, check.stdout
    warned = [line for line in check.stdout.splitlines() if ": warning: " in line]
    # the report's source, both link facts, the part and both figures: every fact given is the report's
    assert len(warned) == 6 and all("source" in line for line in warned), check.stdout
    report = load_report(str(out))
    assert [c["profile"] for c in report["cases"]] == [str(tmp_path / "port" / "lwipopts.h"),
                                                      str(tmp_path / "small" / "lwipopts.h")]
    assert 'profile = "port/lwipopts.h"' in out.read_text()  # written relative to the report
    assert [c["report_mbps"] for c in report["cases"]] == [40, 9]
    assert report["cases"][1]["claim"] == {"ratio_to": {"case": "before", "within": 0.15}}
    inputs = {i["name"]: i for i in report_inputs(report)}
    assert inputs["link RTT"]["value"] == 0.4 and inputs["link RTT"]["provenance"] == "report"
    assert all(i["provenance"] != "assumed" or i.get("range") for i in inputs.values())
    assert case_setup(report, report["cases"][0], None, TimeChoice()).link_spec().rtt_s == pytest.approx(4e-4)


@pytest.mark.parametrize(("args", "words"), [
    (["--before", "nope.h"], ["--before", "does not exist"]),
    (["--figure", "during=3"], ["--figure names case 'during'"]),
    (["--figure", "before=fast"], ["is not Mbit/s"]),
    (["--link", "wifi", "--rate", "10mbit"], ["shared radio channel"]),
    (["--link", "wifi7"], ["no link preset 'wifi7'"]),
    (["--part", "M7"], ["--part needs its speed"]),
])
def test_report_new_bad_input_is_one_line(tmp_path, args, words):
    user_folder(tmp_path)
    base = {"--before": str(tmp_path / "port" / "lwipopts.h"), "--after": str(tmp_path / "small" / "lwipopts.h")}
    given = dict(zip(args[::2], args[1::2], strict=True))
    argv = ["report", "new", str(tmp_path / "n.toml"), "--platform", "openmv-n6"]
    for key, value in {**base, **given}.items():
        argv += [key, str(tmp_path / value) if key in base and key in given else value]
    assert_one_line_error(netrepro_cli(*argv), *words)
    assert not (tmp_path / "n.toml").exists()


def test_report_new_keeps_an_existing_file(tmp_path):
    path = user_folder(tmp_path)
    proc = netrepro_cli("report", "new", str(path), "--platform", "openmv-n6", "--before",
                        str(tmp_path / "small" / "lwipopts.h"), "--after", str(tmp_path / "small" / "lwipopts.h"))
    assert_one_line_error(proc, "exists", "--force")
    assert path.read_text() == REPORT


def test_the_docs_describe_every_key_of_the_format():
    doc = (ROOT / "docs" / "writing-a-report.md").read_text()
    schema = report_schema()
    keys = set(schema["properties"]) | set(schema["properties"]["cases"]["items"]["properties"])
    keys |= set(schema["properties"]["inputs"]["items"]["properties"]) | set(schema["properties"]["cpu"]["properties"])
    keys |= set(schema["properties"]["cases"]["items"]["properties"]["claim"]["properties"])
    missing = sorted(k for k in keys if f"`{k}`" not in doc)
    assert not missing, f"docs/writing-a-report.md does not describe: {missing}"


# ------------------------------------------------------------------ what reproduce does, for a report of yours


def test_sensitivity_varies_a_user_reports_own_part_and_link(tmp_path):
    """[cpu] (its MIPS) and an assumed input on the report's own link are varied like the shipped reports' inputs."""
    text = REPORT.replace('provenance = "report"\nsource = "the mail: ping 2 ms"',
                          'provenance = "assumed"\nwhy = "not measured"\nrange = [1, 4]')
    path = user_folder(tmp_path, text)
    report = load_report(str(path))
    document = {"report": "my-board", "run_dir": str(tmp_path / "runs"), "time": "device", "repeats": 1,
                "band": 0.15, "cases": [{"case": c["case"], "median_mbps": 30.0, "min_mbps": 30.0, "max_mbps": 30.0,
                                         "verdict": "window-limited", "run_dirs": []} for c in report["cases"]]}
    (tmp_path / "runs").mkdir()
    seen = []

    def execute(setup, run_dir):
        seen.append((setup.case, setup.time.mips, setup.link_spec().rtt_s))
        return RunResult(platform="openmv-n6", profile="p", lwip_version="2.1.3", link=setup.link_spec(),
                         workload=setup.workload.describe(), run_dir=str(run_dir), capture="/none.pcap",
                         console_log="/x", device="10.0.0.2", throughput_mbps=20.0,
                         analysis=AnalysisSummary(verdict="window-limited"))

    found = sensitivity(str(path), document, time=TimeChoice("device"), execute=execute)
    assert [i["name"] for i in found["inputs"]] == ["office RTT", "the part's core (STM32F767 (Cortex-M7); its MIPS)"]
    assert found["not_varied"] == []
    assert {(case, mips) for case, mips, _ in seen if mips} == {(c, m) for c in ("before", "after") for m in (216, 432)}
    assert {(case, round(rtt, 4)) for case, mips, rtt in seen if not mips} == {
        (c, r) for c in ("before", "after") for r in (0.001, 0.004)}


@pytest.mark.real
def test_a_report_outside_the_repository_reproduces(tmp_path, no_leftovers):
    """Two cases, two lwipopts.h of the report's own (one needing a stub header), the report's part and link:
    reproduce PATH --json gives each case's median, window and verdict, the windows those files set."""
    path = user_folder(tmp_path)
    page = tmp_path / "page.html"
    proc = netrepro_cli("reproduce", str(path), "--json", "--html", str(page), "--out", str(tmp_path / "runs"),
                        timeout=900, env={**os.environ, "CI": "true", PLOTS_ENV: "on"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    document = json.loads(proc.stdout)
    assert document["report"] == "my-board" and document["file"] == str(path)
    cases = {c["case"]: c for c in document["cases"]}
    assert cases["before"]["device_window_max"] == 8 * 1460 and cases["after"]["device_window_max"] == 4 * 1460
    assert cases["before"]["profile"] == "port" and cases["after"]["profile"] == "small"
    assert all(c["median_mbps"] > 0 and c["verdict"] for c in cases.values())
    assert cases["after"]["verdict"] == "window-limited" and cases["after"]["claim_result"] == "holds"
    # before's claim is only the window and MSS its own lwipopts.h sets: it holds by construction (shown,
    # not counted among the mechanisms)
    assert cases["before"]["claim_result"] == "by-construction" and cases["before"]["by_construction"] is True
    assert document["inputs"][-1]["value"] == 400 and document["inputs"][-1]["sets"] == "report: cpu"
    result = json.loads((Path(cases["after"]["run_dirs"][0]) / "result.json").read_text())
    assert result["time"]["model_mips"] == 400  # the report's part, not the N6's 800 MIPS
    assert result["link"]["rtt_s"] == pytest.approx(0.002)
    assert "STM32F767" in page.read_text()
    assert page.stat().st_size < PAGE_LIMIT_BYTES and "left out" not in page.read_text()  # every plot, drawn
    # each run drew its three plots as PNG and SVG, and the page holds the median runs' SVGs, none missing
    for run_dir in (d for c in cases.values() for d in c["run_dirs"]):
        plots = json.loads((Path(run_dir) / "result.json").read_text())["plots"]
        assert sorted(Path(p).name for p in plots) == RUN_PLOT_FILES
        assert all(Path(p).stat().st_size > 5000 for p in plots)
    assert page.read_text().count("<svg") == 3 * len(cases) and "no plot" not in page.read_text()


@pytest.mark.real
def test_the_pytest_plugin_reproduces_a_case_of_a_users_report(netrepro, tmp_path):
    path = user_folder(tmp_path)
    cases = netrepro.reproduce(str(path), cases=["after"])
    assert list(cases) == ["after"] and cases["after"]["device_window_max"] == 5840
    # the JUnit XML names the folder the report's runs went to, as a property of this test
    (folder,) = [Path(value) for name, value in netrepro.request.node.user_properties if name == "reproduce.run_dir"]
    assert folder.parent == netrepro.runs_root and (folder / "after-1").is_dir(), folder


@pytest.mark.real
def test_a_profile_that_does_not_compile_is_one_line_before_any_run(tmp_path):
    path = user_folder(tmp_path)
    (tmp_path / "small" / "lwipopts.h").write_text(SMALL + "#define TCP_WND (4 * TCP_MSS\nint broken = ;\n")
    proc = netrepro_cli("reproduce", str(path), "--out", str(tmp_path / "runs"), timeout=600)
    assert_one_line_error(proc, "profile small does not compile", "lwipopts.h:")
    assert not (tmp_path / "runs").exists()  # nothing was run
