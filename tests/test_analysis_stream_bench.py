"""benchmarks/analysis_stream_bench.py adds its run to the results file and keeps what was there."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from analysis_stream_bench import with_section


def test_a_run_goes_first_under_the_title_and_the_sections_before_it_stay():
    history = "# Streamed capture analysis\n\n## 2026-12-07, by hand\n\nwhat the rows mean\n"
    assert with_section(history, "## 2026-12-08\n\n| row |") == (
        "# Streamed capture analysis\n\n## 2026-12-08\n\n| row |\n\n## 2026-12-07, by hand\n\nwhat the rows mean\n")


def test_a_first_run_makes_the_title():
    assert with_section("", "## 2026-12-08") == "# Streamed capture analysis\n\n## 2026-12-08\n"
