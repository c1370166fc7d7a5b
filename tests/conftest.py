"""Shared fixtures: the lwIP tree, the platform, and a check that runs leave nothing behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.build import lwip_tree
from harness.platform import load_platform

_LEFTOVER_MARKS = ("qemu-system", "netrepro-link", "sleep infinity", "iperf")


def leftover_processes() -> set[tuple[int, str]]:
    """Processes of the kinds a run starts (QEMU, link, namespace holder, iperf)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if any(mark in cmdline for mark in _LEFTOVER_MARKS):
            found.add((int(entry.name), cmdline))
    return found


@pytest.fixture(scope="session")
def tree() -> Path:
    return lwip_tree()


@pytest.fixture(scope="session")
def n6():
    return load_platform("openmv-n6")


@pytest.fixture
def no_leftovers():
    """Fails the test if it leaves a QEMU, link, namespace holder or iperf process behind."""
    before = leftover_processes()
    yield
    left = {p for p in leftover_processes() - before if p[0] != os.getpid()}
    assert not left, f"processes left behind: {sorted(left)}"
