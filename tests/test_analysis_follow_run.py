"""A real run's capture analysed as the link writes it (harness.analysis.follow): the run's analysis is load_capture's
of the finished capture, and it is ready soon after the workload ends."""

from __future__ import annotations

import time

import pytest

from harness.analysis import load_capture
from harness.link import LinkSpec
from harness.rig.build import FirmwareConfig, build_firmware
from harness.rig.devicetime import TimeChoice
from harness.rig.profile import resolve_profile
from harness.rig.workload import Workload
from harness.runs.analyse import data_rate
from harness.runs.plan import RunPlan
from harness.runs.result import device_busy

pytestmark = pytest.mark.real


def test_a_followed_run_is_analysed_as_its_finished_capture_and_soon(n6, tree, tmp_path, no_leftovers):
    firmware = build_firmware(FirmwareConfig(n6, resolve_profile(n6, "mp-n6-after"), tree))
    plan = RunPlan(n6, firmware, LinkSpec().override(rate="100mbit"), Workload("rx", seconds=3),
                   time=n6.time(TimeChoice("device")))
    assert plan.follows_capture()
    began = time.monotonic()
    result = plan.execute(tmp_path)
    run_s = time.monotonic() - began
    assert result.status == "passed" and result.capture_closed_s is not None, "the capture was followed"
    rate, stage = data_rate(result)
    loading = time.monotonic()
    finished = load_capture(result.capture, device_ip=result.device, link_rate_bps=rate,
                            captured_at=result.captured_at, device_busy=device_busy(result), link_stage=stage)
    load_s = time.monotonic() - loading
    assert result.analysis == finished.to_summary() and result.analysis.frames > 10_000
    # ready soon after the link closed the capture: sooner than reading the finished capture takes, and a small part
    # of the run
    assert result.analysis_ready_s - result.capture_closed_s < load_s, (result.analysis_ready_s, load_s)
    assert result.analysis_ready_s < run_s / 2, (result.analysis_ready_s, run_s)
