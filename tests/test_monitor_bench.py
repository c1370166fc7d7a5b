"""benchmarks/monitor_bench.py: the QMP variant adds only a QMP socket to the engine's arguments, and each case's
medians and what leaving QMP out saves."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from monitor_bench import MONITORS, markdown, summary, with_qmp

from harness.rig.platform import Platform, load_platform


def row(monitor: str, wall_s: float, cpu_s: float, kept_d: float, figure: float, repeated: int = 0) -> dict:
    return {"report": "openmv-n6", "case": "wifi rx before", "monitor": monitor, "planned_d": 3.2,
            "kept_d": kept_d, "stood_at_d": 3.2 if not repeated else 6.4, "repeated": repeated, "wall_s": wall_s,
            "cpu_s": cpu_s, "figure_mbps": figure, "rtt_ms": 6.5}


@dataclass(frozen=True)
class Plan:
    """What with_qmp reads and replaces of a RunPlan (a real plan needs a built firmware)."""

    platform: Platform
    link: str


def test_the_qmp_variant_adds_only_a_qmp_socket(tmp_path):
    plan = Plan(load_platform("openmv-n6"), "wifi")
    variant = with_qmp(plan, tmp_path)
    assert variant.platform.engine.extra_args == (*plan.platform.engine.extra_args, "-qmp",
                                                  f"unix:{tmp_path / 'qmp.sock'},server=on,wait=off")
    assert variant.platform.engine.binary == plan.platform.engine.binary and variant.link == plan.link
    assert plan.platform.engine.extra_args == load_platform("openmv-n6").engine.extra_args  # the plan's own unchanged


def test_medians_and_what_leaving_qmp_out_saves():
    human, qmp = MONITORS
    rows = [row(human, 10.0, 5.0, 4.0, 25.0), row(qmp, 12.0, 6.0, 4.5, 24.0),
            row(human, 11.0, 5.0, 4.2, 24.6), row(qmp, 12.0, 6.4, 4.7, 24.8),
            row(human, 30.0, 9.0, 8.0, 10.0, repeated=1)]  # repeated at twice D: its cost counts, not its figure
    (entry,) = summary(rows)
    assert entry["at"][human] == {"kept_d": 4.2, "wall_s": 11.0, "cpu_s": 5.0, "figure_mbps": 24.8, "runs": 3,
                                  "repeated": 1}
    assert entry["at"][qmp]["cpu_s"] == 6.2 and entry["at"][qmp]["repeated"] == 0
    assert entry["saved_pct"] == {"kept_d": round(100 * (1 - 4.2 / 4.6), 1), "wall_s": 8.3,
                                  "cpu_s": round(100 * (1 - 5.0 / 6.2), 1)}
    text = markdown([entry], "python benchmarks/monitor_bench.py", "abc1234", 2.0, 2)
    assert "| openmv-n6 wifi rx before | human monitor | 4.2 | 11.0 | 5.0 | 24.8 | 1 of 3 |" in text
    assert "| openmv-n6 wifi rx before | 8.7 % | 8.3 % | 19.4 % |" in text
