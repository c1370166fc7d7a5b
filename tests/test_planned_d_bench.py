"""benchmarks/planned_d_bench.py: each case's medians at each planned D, and the smaller D against the larger."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from planned_d_bench import markdown, summary


def row(case: str, planned_d: float, wall_s: float, figure: float, repeated: int = 0) -> dict:
    return {"report": "openmv-n6", "case": case, "planned_d": planned_d, "kept_d": planned_d + 1.5,
            "stood_at_d": planned_d, "repeated": repeated, "wall_s": wall_s, "cpu_s": wall_s / 2,
            "figure_mbps": figure, "rtt_ms": 0.1}


ROWS = [row("wifi rx before", 3.2, 10.0, 25.0), row("wifi rx before", 1.6, 6.0, 24.0),
        row("wifi rx before", 3.2, 12.0, 25.5), row("wifi rx before", 1.6, 8.0, 23.0, repeated=1),
        row("wifi rx before", 3.2, 11.0, 24.5), row("wifi rx before", 1.6, 7.0, 23.5)]


def test_the_medians_at_each_d_and_the_smaller_d_against_the_larger():
    (entry,) = summary(ROWS)
    assert list(entry["at"]) == [3.2, 1.6]  # the platform's D first
    assert entry["at"][3.2] == {"kept_d": 4.7, "wall_s": 11.0, "cpu_s": 5.5, "figure_mbps": 25.0, "rtt_ms": 0.1,
                                "runs": 3, "repeated": 0}
    assert entry["at"][1.6]["wall_s"] == 7.0 and entry["at"][1.6]["repeated"] == 1
    assert entry["wall_ratio"] == round(7 / 11, 3) and entry["cpu_ratio"] == round(3.5 / 5.5, 3)
    assert entry["figure_diff_pct"] == -6.0


def test_cases_keep_their_order_and_a_case_at_one_d_has_no_comparison():
    rows = [row("ethernet rx before", 3.2, 9.0, 94.9), *ROWS]
    first, second = summary(rows)
    assert (first["case"], second["case"]) == ("ethernet rx before", "wifi rx before")
    assert "wall_ratio" not in first and second["figure_diff_pct"] == -6.0


def test_the_table_has_a_line_per_case_and_d_and_one_comparison_per_case():
    text = markdown(summary(ROWS), "python benchmarks/planned_d_bench.py", "abc1234", 3.0, 3)
    assert "| openmv-n6 wifi rx before | 3.2 | 4.7 | 11.0 | 5.5 | 25.0 | 0.1 | 0 of 3 |" in text
    assert "| openmv-n6 wifi rx before | 1.6 | 3.1 | 7.0 | 3.5 | 23.5 | 0.1 | 1 of 3 |" in text
    assert "| openmv-n6 wifi rx before | x0.636 | x0.636 | -6.0 % |" in text
