"""LinkSpec and Direction are written out so that static tools read their fields; the settings table
(harness/link/settings.py) stays the one definition: their fields, types and defaults must be the table's,
in its order, and these tests fail when the two drift."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from harness.link import LinkSpec
from harness.link.settings import DIRECTION_SETTINGS, LINK_SETTINGS, WAYS, Setting
from harness.link.spec import Direction


def _declared(cls: type, skip: tuple[str, ...] = ()) -> list[tuple[str, Any, Any, type]]:
    """name, annotation, default and the default's type of each field (with `from __future__ import
    annotations` an annotation is its text, as the table's check writes it)."""
    return [(f.name, f.type, f.default, type(f.default)) for f in dataclasses.fields(cls) if f.name not in skip]


def _table(settings: tuple[Setting, ...]) -> list[tuple[str, Any, Any, type]]:
    return [(s.field, s.check.type, s.default, type(s.default)) for s in settings]


def test_direction_has_the_tables_direction_settings_exactly():
    assert _declared(Direction) == _table(DIRECTION_SETTINGS)


def test_link_spec_has_both_directions_then_the_tables_link_settings_exactly():
    fields = dataclasses.fields(LinkSpec)
    assert [(f.name, f.type, f.default_factory) for f in fields[:2]] == [(way, "Direction", Direction) for way in WAYS]
    assert _declared(LinkSpec, skip=WAYS) == _table(LINK_SETTINGS)


@pytest.mark.parametrize("cls", [Direction, LinkSpec])
def test_the_specs_are_frozen(cls):
    assert cls.__dataclass_params__.frozen
    with pytest.raises(dataclasses.FrozenInstanceError):
        cls().seed = 2  # type: ignore[misc]


def test_a_drift_would_be_seen():
    """The comparison tells a changed default, type or order apart (what a drift would look like)."""
    table = _table(DIRECTION_SETTINGS)
    assert _declared(Direction) != [*table[:1], (table[1][0], "int", 0, int), *table[2:]]
    assert _declared(Direction) != [table[1], table[0], *table[2:]]
