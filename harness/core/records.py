"""Reading a frozen dataclass back from the JSON object it was written as."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any


def known_fields(cls: type, data: Mapping[str, Any] | None) -> dict[str, Any]:
    """The entries of `data` that are fields of the dataclass `cls`: keys another version wrote, or that
    a reader added beside them (e.g. a result's `peer_figures_timed_by`), are left out."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in (data or {}).items() if k in names}
