"""The connection states' rows (core.connection.CONNECTION_SPECS): the questions the faces ask of a state are
columns of its row, each true of the states that mean it and of no other."""

from __future__ import annotations

import pytest
from workroom.core.connection import CONNECTION_SPECS, ConnectionInfo, ConnectionState

pytestmark = pytest.mark.unit

S = ConnectionState


def test_every_state_has_one_row() -> None:
    assert set(CONNECTION_SPECS) == set(ConnectionState)
    assert all(spec.state is state for state, spec in CONNECTION_SPECS.items())


@pytest.mark.parametrize(("column", "states"), [
    ("asleep", {S.ASLEEP}),
    ("may_be_asleep", {S.ASLEEP, S.UNREADABLE}),  # connecting may wake it: asked for, never done unasked
    ("retrying", {S.BACKING_OFF}),
    ("quiet", {S.QUIET}),
    ("live", {S.LIVE, S.QUIET}),
])
def test_a_column_holds_for_exactly_the_states_that_mean_it(column: str, states: set[ConnectionState]) -> None:
    assert {s for s, spec in CONNECTION_SPECS.items() if getattr(spec, column)} == states


def test_a_connection_asks_its_states_row() -> None:
    info = ConnectionInfo(state=S.ASLEEP)
    assert info.spec.asleep and info.spec.may_be_asleep and not info.spec.live
    assert not ConnectionInfo(state=S.LOST).spec.may_be_asleep
