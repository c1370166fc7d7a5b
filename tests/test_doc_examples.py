"""Every example in docs/writing-a-report.md runs here, in a scratch folder that mirrors the checkout, as a user
would type it there (the same machinery as the README's: tests/readme_examples.py)."""

from __future__ import annotations

import pytest
from readme_examples import ROOT, WORKSPACE, example_param, fenced_block_count, readme_examples

DOC = ROOT / "docs" / "writing-a-report.md"
EXAMPLES = readme_examples(DOC)


@pytest.fixture(scope="module", autouse=True)
def workspace():
    """One mirrored working folder for the module; kept (and named in failures) if an example failed."""
    yield WORKSPACE
    WORKSPACE.close()


@pytest.mark.parametrize("example", [example_param(e) for e in EXAMPLES])
def test_doc_example(example):
    try:
        example.evaluate()
    except BaseException:
        WORKSPACE.failed = True  # its files and run folders stay, for a look
        raise


def test_every_block_of_the_doc_runs_or_says_why():
    assert len(EXAMPLES) == fenced_block_count(DOC.read_text())
    problems = [f"{e.parsed.title}: {'; '.join(e.parsed.problems)}" for e in EXAMPLES if e.parsed.problems]
    assert not problems, "\n".join(problems)
    ran = [" ".join(c.argv[:3]) for e in EXAMPLES for c in e.parsed.commands if c.runs]
    assert "./netrepro report new" in ran and "./netrepro report from-capture" in ran
    assert sum(r.startswith("./netrepro reproduce") for r in ran) == 2  # both worked examples end reproduced
    assert any("docs/examples/port/lwipopts.h" in " ".join(c.argv) for e in EXAMPLES for c in e.parsed.commands)
