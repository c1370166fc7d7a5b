"""Every example in the pages of docs/ that show a user what to type runs here, in a scratch folder that mirrors
the checkout, as a user would type it there (the same machinery as the README's: tests/readme_examples.py)."""

from __future__ import annotations

import pytest
from readme_examples import ROOT, WORKSPACE, fenced_block_count, readme_examples

# The pages whose blocks a user copies; each block runs, or its marker says why not.
DOCS = ("writing-a-report.md", "your-port.md", "fuzzing.md", "wifi-air.md", "device-time.md")
EXAMPLES = {doc: readme_examples(ROOT / "docs" / doc) for doc in DOCS}


def _param(doc: str, example) -> object:
    """An example as a pytest parameter: marked real when it runs anything, named by its page, line and kind."""
    marks = [pytest.mark.real] if example.parsed.runs_anything() else []
    return pytest.param(example, marks=marks, id=f"{doc} {example.parsed.title}")


def _ran(doc: str) -> list[str]:
    return [" ".join(c.argv) for e in EXAMPLES[doc] for c in e.parsed.commands if c.runs]


@pytest.fixture(scope="module", autouse=True)
def workspace():
    """One mirrored working folder for the module; kept (and named in failures) if an example failed."""
    yield WORKSPACE
    WORKSPACE.close()


@pytest.mark.parametrize("example", [_param(doc, e) for doc, examples in EXAMPLES.items() for e in examples])
def test_doc_example(example):
    try:
        example.evaluate()
    except BaseException:
        WORKSPACE.failed = True  # its files and run folders stay, for a look
        raise


@pytest.mark.parametrize("doc", DOCS)
def test_every_block_of_the_doc_runs_or_says_why(doc):
    assert len(EXAMPLES[doc]) == fenced_block_count((ROOT / "docs" / doc).read_text())
    problems = [f"{e.parsed.title}: {'; '.join(e.parsed.problems)}" for e in EXAMPLES[doc] if e.parsed.problems]
    assert not problems, "\n".join(problems)
    commands = [e for e in EXAMPLES[doc] if e.parsed.kind == "commands"]
    assert commands, f"docs/{doc} shows no command"


def test_writing_a_report_runs_both_ways_to_a_report():
    ran = [" ".join(r.split()[:3]) for r in _ran("writing-a-report.md")]
    assert "./netrepro report new" in ran and "./netrepro report from-capture" in ran
    assert sum(r.startswith("./netrepro reproduce") for r in ran) == 2  # both worked examples end reproduced
    examples = EXAMPLES["writing-a-report.md"]
    assert any("docs/examples/port/lwipopts.h" in " ".join(c.argv) for e in examples for c in e.parsed.commands)


def test_the_moved_pages_run_what_they_show():
    """The pages that took over the README's longer sections still run their commands."""
    port = _ran("your-port.md")
    assert any("docs/examples/port/lwipopts.h" in r for r in port)
    assert any("docs/examples/rtos/lwipopts.h" in r for r in port)
    assert any(r.startswith("./netrepro fuzz") for r in _ran("fuzzing.md"))
    assert any("--minutes" in r for r in _ran("fuzzing.md"))  # the soak
    air = _ran("wifi-air.md")
    assert any(r.startswith("./netrepro calibrate-medium") for r in air)
    assert any(r.startswith("./netrepro calibrate-rtt") for r in air)
    assert any("--time host" in r for r in _ran("device-time.md"))
