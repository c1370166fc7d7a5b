"""How much of the machine netrepro may use: its cores, or the share NETREPRO_CPUS gives."""

from __future__ import annotations

import os

import pytest

from harness.core.errors import NetreproError
from harness.core.machine import CPUS_ENV, machine_cpus


def test_the_share_given_is_the_cores_used(monkeypatch):
    monkeypatch.setenv(CPUS_ENV, "3")
    assert machine_cpus() == 3
    monkeypatch.delenv(CPUS_ENV)
    assert machine_cpus() == os.cpu_count()


@pytest.mark.parametrize("given", ["0", "two", "-1", "1.5"])
def test_a_share_that_is_not_a_count_is_one_clear_error(monkeypatch, given):
    monkeypatch.setenv(CPUS_ENV, given)
    with pytest.raises(NetreproError, match=f"{CPUS_ENV}='{given}' is not a number of cores"):
        machine_cpus()
