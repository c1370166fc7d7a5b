"""How much of this machine netrepro may use: its cores, or fewer when it shares them ($NETREPRO_CPUS).

A machine that also runs other work (a CI runner, pytest-xdist's workers, each running boards of its own) gives
each user of it a share of the cores; runs side by side (`--jobs`) are planned on that share, so that no board
falls behind because another user of the machine took its core.
"""

from __future__ import annotations

import os

from harness.core.errors import NetreproError

CPUS_ENV = "NETREPRO_CPUS"


def machine_cpus() -> int:
    """The cores netrepro may use: $NETREPRO_CPUS when set (1 or more), else the machine's."""
    given = os.environ.get(CPUS_ENV)
    if not given:
        return os.cpu_count() or 1
    if not given.isdigit() or int(given) < 1:
        raise NetreproError(f"{CPUS_ENV}={given!r} is not a number of cores",
                            f"set {CPUS_ENV} to 1 or more, or unset it")
    return int(given)
