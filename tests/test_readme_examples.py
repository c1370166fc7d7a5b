"""Every example in README.md runs here as a user would copy it, or says why it cannot.

The machinery is readme_examples.py (Sybil finds the fenced blocks; the HTML comment before a
block says how it runs). The README's pytest block runs in tests/test_plugin.py, in a fresh
virtualenv after a plain install, through the same evaluator. The tests at the end feed
deliberately wrong copies of examples through the same machinery and see each fail.
"""

from __future__ import annotations

import re
import shlex

import pytest
from readme_examples import (
    README,
    ROOT,
    WORKSPACE,
    compare_shape,
    example_param,
    fenced_block_count,
    make_block,
    parse_text,
    readme_examples,
    shape,
)
from sybil.example import SybilFailure

from harness.analysis import load_capture

EXAMPLES = readme_examples()


@pytest.fixture(scope="module", autouse=True)
def workspace():
    """One mirrored working folder for the module; kept (and named in failures) if one failed."""
    yield WORKSPACE
    WORKSPACE.close()


@pytest.mark.parametrize("example", [example_param(e) for e in EXAMPLES if e.parsed.kind != "pytest"])
def test_readme_example(example):
    try:
        example.evaluate()
    except BaseException:
        WORKSPACE.failed = True  # its run folders stay, for a look
        raise


def test_every_fenced_block_is_an_example_that_runs_or_says_why():
    text = README.read_text()
    assert len(EXAMPLES) == fenced_block_count(text), "a fenced block of README.md escaped the parser"
    problems = [f"{e.parsed.title}: {'; '.join(e.parsed.problems)}" for e in EXAMPLES if e.parsed.problems]
    assert not problems, "\n".join(problems)
    kinds = [e.parsed.kind for e in EXAMPLES]
    assert kinds.count("commands") >= 3 and kinds.count("pytest") == 1, kinds
    # every command block runs at least one command, and the README's main job is among them
    ran = [shlex.join(c.argv) for e in EXAMPLES for c in e.parsed.commands if c.runs]
    assert "./netrepro reproduce openmv-n6" in ran
    # a pytest block names the test that runs it, and that test takes it from here
    for example in EXAMPLES:
        if example.parsed.kind == "pytest":
            named = re.findall(r"tests/\w+\.py", example.parsed.pytest)
            assert named, f"{example.parsed.title}: name the test that runs it"
            assert all("readme_examples" in (ROOT / n).read_text() for n in named), named


# ------------------------------------------------------------------ the marker language


def test_rules_shorten_the_commands_they_name():
    block = make_block("sh", "./netrepro run a --seconds 10\n./netrepro compare a \\\n  --lwip b\n./x y\n", 1,
                       "text\n<!-- example:\n./netrepro run + --seconds 3  # shorter\n"
                       "./netrepro compare not run: a reason long enough\n-->\n")
    assert not block.problems
    run, compare, other = block.commands
    assert run.effective == ["./netrepro", "run", "a", "--seconds", "10", "--seconds", "3"]
    assert compare.argv == ["./netrepro", "compare", "a", "--lwip", "b"] and not compare.runs
    assert other.effective == ["./x", "y"] and other.runs


@pytest.mark.parametrize(("language", "source", "before", "problem"), [
    ("", "a table\n", "", "an output block must say where it comes from"),
    ("", "a table\n", "<!-- example: stored: x.md -->\n", "exactly one of"),
    ("sh", "./a\n", "<!-- example: not run: path -->\n", "needs a reason"),
    ("sh", "./a\n", "<!-- example: ./b + --x -->\n", "matches no command"),
    ("sh", "./a\n", "<!-- example: run it please -->\n", "cannot read the marker"),
    ("console", "output\n$ ./a\n", "", "output before the first"),
])
def test_a_block_that_does_not_say_how_it_runs_is_refused(language, source, before, problem):
    block = make_block(language, source, 1, before)
    assert any(problem in p for p in block.problems), block.problems


def test_only_the_comment_right_before_a_block_is_its_marker():
    block = make_block("sh", "./a\n", 1, "<!-- example: not run: an earlier block's reason -->\n```sh\nx\n```\n\n")
    assert block.rules == [] and block.commands[0].runs


def test_shapes_free_the_figures_and_keep_the_columns():
    doc = ["(3 runs a case; figures in Mbit/s; run folders in /tmp/x-1)", "",
           "case        report   median  verdict         claim", "-" * 52,
           "wifi a          31     27.2  window-limited  holds",
           "wifi b           -     40.8  link-limited    -"]
    printed = ["(1 runs a case; figures in Mbit/s; run folders in runs/2026-b)", "",
               "case        report   median  verdict         claim", "-" * 52,
               "wifi b           -     38.0  window-limited  -"]
    assert compare_shape(doc, printed) is None
    assert compare_shape([d.replace("Mbit/s", "KB/s") for d in doc], printed)
    assert compare_shape(doc, [*printed, "an extra line"])
    assert compare_shape(doc, [p.replace("  claim", "  outcome") for p in printed])
    assert shape("wifi a  31  27.2 (26.4-27.2)  holds") == ("wifi a", "<n>", "<n> (<n>-<n>)", "<claim>")


def test_the_runs_the_host_disturbed_are_the_machines_not_the_readmes():
    from harness.studies.cases import replaced_notes

    summary = "1 of 1 report figures agree within 15 %; 0 cases fail"
    doc = ["case    median", "-" * 14, "wifi a    27.2", "", summary, "", "leak check: none"]
    entry = {"figure": 20.1, "dilation": 4, "why": "the board fell behind", "by": {"figure": 22.3, "dilation": 8}}
    notes = replaced_notes([{"case": "wifi a", "runs_replaced": [entry]}], "case")
    printed = ["case    median", "-" * 14, "wifi a    26.0", "",
               summary + "; 1 case had a run the host disturbed replaced at twice D (listed below)", *notes, "",
               "leak check: none"]
    assert notes and compare_shape(doc, printed) is None
    assert compare_shape(doc, [*printed[:-1], "an extra line", printed[-1]])


# ------------------------------------------------------------------ wrong copies fail


def _example(text: str, needle: str):
    """The example of a (changed) README text whose block holds `needle`."""
    found = [e for e in parse_text(text).examples() if needle in e.parsed.source]
    assert len(found) == 1, f"{needle!r} is in {len(found)} blocks"
    return found[0]


def _changed(old: str, new: str) -> str:
    text = README.read_text()
    assert text.count(old) == 1, f"{old!r} is not once in README.md"
    return text.replace(old, new)


def test_a_wrong_command_fails():
    line = "--set TCP_WND=24*TCP_MSS --link wifi --workload sock-rx\n"
    example = _example(_changed(line, line.replace("sock-rx", "sock-rxx")), "sock-rxx")
    with pytest.raises(SybilFailure, match=r"(?s)exited 2.*invalid choice: 'sock-rxx'"):
        example.evaluate()


def test_a_wrong_option_in_a_command_that_does_not_run_fails():
    example = _example(_changed("--good v2.1.3", "--goood v2.1.3"), "--goood")
    assert not example.parsed.commands[-1].runs
    with pytest.raises(SybilFailure, match=r"bisect: error: .*--good"):
        example.evaluate()


def test_a_stored_table_that_is_not_the_stored_result_fails():
    example = _example(_changed("default 536           ethernet (wire)            269.4           244.1",
                                "default 536           ethernet (wire)            269.4           254.1"), "254.1")
    with pytest.raises(SybilFailure, match=r"not verbatim in benchmarks/results/reproduce-ethernut2\.md"):
        example.evaluate()


def test_a_wrong_pytest_example_fails(tmp_path):
    text = README.read_text()
    start = text.index("```python\nimport pytest\n")
    end = text.index("```\n", start + 3)
    wrong = text[:start] + text[start:end].replace('"openmv-n6"', '"openmv-n7"') + text[end:]
    example = _example(wrong, '"openmv-n7"')
    assert example.parsed.kind == "pytest"
    example.namespace["project"] = tmp_path / "project"
    with pytest.raises(SybilFailure, match=r"(?s)did not pass: .*3 failed.*openmv-n7"):
        example.evaluate()


# The worked example's first row, as the stored run printed it (a rerun of the benchmark changes its figures).
_ROW = next(line for line in (ROOT / "benchmarks/results/reproduce-openmv-n6.md").read_text().splitlines()
            if line.startswith("wifi rx before"))
_FIGURE = re.search(r"\d+\.\d \(\S+, 3 runs\)", _ROW).group()
_CELLS = re.search(r"1460 .*holds$", _ROW).group()
_SUMMARY = next(line for line in (ROOT / "benchmarks/results/reproduce-openmv-n6.md").read_text().splitlines()
                if "report figures agree within 15 %" in line)


@pytest.mark.real
@pytest.mark.parametrize(("old", "new"), [
    (_FIGURE, _FIGURE.replace("runs", "frames")),
    (_CELLS, _CELLS.removesuffix("holds").rstrip()),
    (_SUMMARY, _SUMMARY.replace("within 15 %", "within 15 Mbit/s")),
], ids=["words", "missing-cell", "unit"])
def test_an_output_block_that_is_not_what_the_command_prints_fails(old, new):
    """A stored block is checked verbatim against its stored result and in shape against a rerun: a
    changed column name, a missing cell or another unit fails."""
    example = _example(_changed(old, new), new)
    with pytest.raises(SybilFailure, match=r"the README shows|is not verbatim"):
        example.evaluate()


def test_the_pytest_examples_window_is_the_largest_the_device_advertised_not_the_usual_one():
    """On the stored sock-rx captures: the README's expectation holds, the issue's failed."""
    block = next(e.parsed for e in EXAMPLES if e.parsed.kind == "pytest")
    namespace: dict = {}
    exec(block.source.split("@pytest.mark")[0], namespace)  # the module's constants (TCP_WND)
    tcp_wnd = namespace["TCP_WND"]
    assert "expect_largest_device_window(TCP_WND[profile])" in block.source
    for profile in ("mp-n6-before", "mp-n6-after"):
        capture = load_capture(ROOT / f"captures/openmv-n6-wifi-sock-rx-{profile}.pcap", device_ip="10.77.0.2")
        capture.expect_largest_device_window(tcp_wnd[profile])
        capture.expect_device_window(tcp_wnd[profile] - 1460)  # the usual one, as the README says
        with pytest.raises(AssertionError, match=rf"expected {tcp_wnd[profile]} in at least 95% .*usual window: "
                                                 rf"the largest the device advertised was {tcp_wnd[profile]} "):
            capture.expect_device_window(tcp_wnd[profile])

