"""benchmarks/planned_d_bench.py: each case's medians at each planned D, the others against the platform's, and the
figure and RTT fitted as a + b / D."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from planned_d_bench import fit, markdown, summary


def row(case: str, speedup: float, wall_s: float, figure: float, rtt_ms: float = 6.0, stood_at: float | None = None,
        repeated: int = 0) -> dict:
    planned = 3.2 / speedup
    return {"report": "openmv-n6", "case": case, "speedup": speedup, "planned_d": planned, "kept_d": planned + 1.5,
            "stood_at_d": stood_at or planned, "repeated": repeated, "wall_s": wall_s, "cpu_s": wall_s / 2,
            "figure_mbps": figure, "rtt_ms": rtt_ms}


ROWS = [row("wifi rx before", 1, 10.0, 25.0), row("wifi rx before", 2, 6.0, 24.0),
        row("wifi rx before", 1, 12.0, 25.5), row("wifi rx before", 2, 8.0, 23.0),
        row("wifi rx before", 1, 11.0, 24.5), row("wifi rx before", 2, 7.0, 23.5),
        # repeated at twice D by the disturbed-run policy: its wall counts, its figure is another D's
        row("wifi rx before", 2, 20.0, 10.0, stood_at=3.2, repeated=1)]


def test_the_medians_at_each_d_and_the_smaller_d_against_the_platforms():
    (entry,) = summary(ROWS)
    assert list(entry["at"]) == [3.2, 1.6] and entry["platform_d"] == 3.2  # the largest D first
    assert entry["at"][3.2] == {"kept_d": 4.7, "wall_s": 11.0, "cpu_s": 5.5, "figure_mbps": 25.0, "rtt_ms": 6.0,
                                "runs": 3, "repeated": 0}
    assert entry["at"][1.6]["wall_s"] == 7.5 and entry["at"][1.6]["repeated"] == 1 and entry["at"][1.6]["runs"] == 4
    assert entry["at"][1.6]["figure_mbps"] == 23.5  # the repeated run's figure left out
    assert entry["against_platform"] == {1.6: {"wall_ratio": round(7.5 / 11, 3), "cpu_ratio": round(3.75 / 5.5, 3),
                                               "figure_diff_pct": -6.0}}
    assert entry["fit"] is None  # two D cannot test a law


def test_cases_keep_their_order():
    first, second = summary([row("ethernet rx before", 1, 9.0, 94.9), *ROWS])
    assert (first["case"], second["case"]) == ("ethernet rx before", "wifi rx before")
    assert first["against_platform"] == {} and second["against_platform"][1.6]["figure_diff_pct"] == -6.0


def test_a_figure_on_the_line_a_plus_b_over_d_is_fitted_exactly_and_one_off_it_shows_a_residual():
    def at(figure: float, rtt: float) -> dict:
        return {"figure_mbps": figure, "rtt_ms": rtt}

    on_line = {d: at(25 - 4 / d, 6 + 1 / d) for d in (6.4, 3.2, 1.6)}
    found = fit(on_line, 3.2)
    assert found["figure_mbps"] == {"at_unbounded_d": 25.0, "residual_pct": 0.0,
                                    "platform_d_off_pct": round(100 * ((25 - 1.25) / 25 - 1), 2)}
    assert found["rtt_ms"]["at_unbounded_d"] == 6.0 and found["rtt_ms"]["platform_d_off_pct"] == 5.21
    off_line = {**on_line, 6.4: at(26.0, 6 + 1 / 6.4)}
    assert fit(off_line, 3.2)["figure_mbps"]["residual_pct"] > 1
    assert fit({3.2: on_line[3.2], 1.6: on_line[1.6]}, 3.2) is None


def test_the_tables_have_a_line_per_case_and_d_a_comparison_per_other_d_and_the_fit():
    rows = [*ROWS, row("wifi rx before", 0.5, 20.0, 24.8, rtt_ms=5.9)]
    text = markdown(summary(rows), "python benchmarks/planned_d_bench.py", "abc1234", 3.0, 3)
    assert "| openmv-n6 wifi rx before | 3.2 | 4.7 | 11.0 | 5.5 | 25.0 | 6.0 | 0 of 3 |" in text
    assert "| openmv-n6 wifi rx before | 1.6 | 3.1 | 7.5 | 3.75 | 23.5 | 6.0 | 1 of 4 |" in text
    assert "| openmv-n6 wifi rx before | 1.6 (platform 3.2) | 0.682 | 0.682 | -6.0 % |" in text
    assert "| openmv-n6 wifi rx before | 6.4 (platform 3.2) | 1.818 | 1.818 | -0.8 % |" in text
    (fitted,) = [line for line in text.splitlines() if line.startswith("| openmv-n6 wifi rx before | 2")]
    assert fitted.count("|") == 8


def test_alternated_runs_each_plan_in_turn_and_names_it(monkeypatch):
    import planned_d_bench

    ran = []
    monkeypatch.setattr(planned_d_bench, "one_run", lambda plan, direction: ran.append((plan, direction)) or {"x": 1})
    rows = planned_d_bench.alternated("openmv-n6", "wifi tx before", "speedup", {1: "p1", 2: "p2"}, 2)
    assert ran == [("p1", "tx"), ("p2", "tx"), ("p1", "tx"), ("p2", "tx")]
    assert [r["speedup"] for r in rows] == [1, 2, 1, 2] and rows[0] == {"report": "openmv-n6",
                                                                     "case": "wifi tx before", "speedup": 1, "x": 1}
