"""How a box sleeps is one row per metering kind (core.metering): every kind has a row, every face reads it,
and a kind without a row is refused loudly instead of being shown as plain "Busy"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from unit.core.status_factory import busy_dict
from workroom.core.badge import BadgeKind, badge
from workroom.core.connection import ConnectionInfo, ConnectionState
from workroom.core.metering import (
    METERING_ROWS,
    IdleMetering,
    Keeper,
    NotKeptAwakeReason,
    UnknownMetering,
    metering_row,
)
from workroom.core.protocol import Status
from workroom.core.provider_specs import PROVIDER_SPECS
from workroom.core.traits import ProviderTraits, Transport

pytestmark = pytest.mark.unit

DOC = Path(__file__).resolve().parents[3] / "docs" / "providers.md"
LIVE = ConnectionInfo(state=ConnectionState.LIVE)


def test_every_metering_kind_has_its_row() -> None:
    assert set(METERING_ROWS) == set(IdleMetering)
    for kind, row in METERING_ROWS.items():
        assert row.metering is kind
        assert metering_row(kind) is row and metering_row(kind.value) is row
        assert row.sleeps is (row.keeper is not Keeper.NOTHING_NEEDED), kind
        assert bool(row.not_kept_reasons) is row.sleeps, kind


def test_every_not_kept_awake_reason_belongs_to_some_row() -> None:
    declared = set().union(*(row.not_kept_reasons for row in METERING_ROWS.values()))
    assert declared == set(NotKeptAwakeReason)


def test_every_keeper_is_some_rows() -> None:
    assert {row.keeper for row in METERING_ROWS.values()} == set(Keeper)


def test_a_kind_without_a_row_is_refused() -> None:
    with pytest.raises(UnknownMetering, match="no metering row"):
        metering_row("weekdays")


def test_a_sleepable_box_of_a_kind_without_a_row_is_never_shown_as_plain_busy() -> None:
    """The trap: a sleepable provider whose metering no face knows fell through to plain "Busy" with no reason
    while nothing kept the box awake. Now the badge refuses it loudly (no provider can be declared with it:
    `ProviderTraits` refuses it too)."""
    unknown = ProviderTraits.model_construct(idle_metering="weekdays",  # type: ignore[arg-type]
                                             transport=Transport.SSH)
    status = Status.model_validate(busy_dict())
    with pytest.raises(UnknownMetering):
        badge(status, unknown, LIVE)


@pytest.mark.parametrize("kind", list(PROVIDER_SPECS))
def test_a_busy_box_is_shown_kept_awake_only_by_its_rows_keeper(kind: str) -> None:
    """A busy, live box: the badge names its row's keeper (or nothing, where nothing is needed)."""
    traits = PROVIDER_SPECS[kind].traits
    row = traits.metering
    connection = ConnectionInfo(state=ConnectionState.LIVE, keepawake_running=row.keeper is Keeper.THIS_COMPUTER)
    result = badge(Status.model_validate(busy_dict()), traits, connection)
    assert result.kind is BadgeKind.BUSY, result
    if row.keeper is Keeper.NOTHING_NEEDED:
        assert "kept awake" not in result.tooltip.lower()
    else:
        assert f"kept awake by {row.keeper_words}" in result.tooltip.lower(), result.tooltip


def _doc_rows() -> dict[str, dict[str, str]]:
    text = DOC.read_text()
    table = text[text.index("| metering |"):].split("\n\n", 1)[0].splitlines()
    header = [c.strip() for c in table[0].strip("|").split("|")]
    rows = {}
    for line in table[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = dict(zip(header, cells, strict=True))
    return rows


def test_the_docs_table_has_every_row() -> None:
    documented = _doc_rows()
    assert set(documented) == {kind.value for kind in IdleMetering}
    for kind, row in METERING_ROWS.items():
        doc = documented[kind.value]
        assert doc["sleeps"] == ("yes" if row.sleeps else "no"), kind
        assert f"`{row.keeper.value}`" in doc["kept awake by"], kind
        assert doc["our bytes move its idle clock"] == ("yes" if row.own_traffic_resets_clock else "no"), kind
        assert doc["session while idle"] == ("yes" if row.session_while_idle else "no"), kind
        assert set(re.findall(r"`([a-z_]+)`", doc["not kept awake when"])) == {r.value for r in row.not_kept_reasons}
