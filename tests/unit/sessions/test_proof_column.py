"""The metering row's proof column decides which loop proves a keep-awake (core.metering `Proof`): the provider's
idle clock is read by the heartbeat watch only on rows whose proof it is; a platform's stop time is its keeper's,
and a box that never sleeps has nothing to prove."""

from __future__ import annotations

import pytest
from unit.core.status_factory import make_busy
from workroom.core.metering import Proof
from workroom.core.provider_specs import PROVIDER_SPECS
from workroom.sessions.heartbeat_watch import keep_awake_interval

pytestmark = pytest.mark.unit

KEEPING = {"keep_awake": {"enabled": True, "interval_seconds": 60.0, "sent": 3, "last_sent": 1.0, "error": None,
                          "target": None}}


@pytest.mark.parametrize("kind", list(PROVIDER_SPECS))
def test_the_idle_clock_is_watched_only_where_it_is_the_rows_proof(kind: str) -> None:
    traits = PROVIDER_SPECS[kind].traits
    interval = keep_awake_interval(traits, make_busy(**KEEPING), outside_running=True)
    assert (interval is not None) is (traits.metering.proof is Proof.IDLE_CLOCK), (kind, interval)


def test_every_proof_but_nothing_to_prove_belongs_to_a_row_that_sleeps() -> None:
    rows = {spec.traits.metering for spec in PROVIDER_SPECS.values()}
    assert {row.proof for row in rows} == set(Proof)  # every proof is some row's
    assert all(row.sleeps is (row.proof is not Proof.NOTHING_TO_PROVE) for row in rows)
