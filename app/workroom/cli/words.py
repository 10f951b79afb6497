"""What a command says of a host, in the app's words: its status line and JSON, and the answer for a box left
asleep (from the one record every face reads, core.last_known)."""

from __future__ import annotations

import time

TYPE_CHECKING = False  # not `typing`'s: the command's start imports nothing it does not use (docs/cli.md)

if TYPE_CHECKING:
    from typing import Any

    from workroom.core.errors import BoxAsleep
    from workroom.core.host_snapshot import HostSnapshot
    from workroom.core.last_known import LastKnown
    from workroom.sessions.engine import Engine


WAKE_DOING = {"connect": "connect", "keep": "keep it awake", "why": "read its record",  # keep: never suggested
              "exclusions": "read or change what never counts as work"}
"""Per command that takes --wake: what it does once the box is awake (the asleep answer's last words)."""


def _clock(unix: float | None) -> str:
    import datetime

    return "" if unix is None else datetime.datetime.fromtimestamp(unix).strftime("%H:%M")


def asleep_words(engine: Engine, name: str) -> str:
    """"box2 is asleep (since 14:02); last known busy (2 min ago)", from the one record every face reads
    (core.last_known)."""
    known = engine.last_known(name)
    since = f" (since {_clock(known.asleep_since)})" if known.asleep_since is not None else ""
    words = f"{name} is asleep{since}"
    return words + ("; " + known.words(time.time()) if known.known else "; nothing known of it yet")


def last_known_json(known: LastKnown) -> dict[str, Any]:
    return {"verdict": known.doing, "reported": known.reported, "since": known.since, "seen_at": known.seen_at,
            "asleep_since": known.asleep_since}


def asleep_answer(engine: Engine, name: str, command: str) -> BoxAsleep:
    from workroom.core.errors import BoxAsleep

    hint = (f"`workroom {command} {name} --wake` to wake it and {WAKE_DOING[command]}." if command != "keep" else
            "Nothing was sent: an asleep box has no work to keep awake (Keep awake is for a box that is busy past its "
            "awake ceiling).")
    answer = BoxAsleep("Asleep", asleep_words(engine, name), hint)
    answer.facts = {"name": name, "asleep": True, "last_known": last_known_json(engine.last_known(name))}
    return answer


def snapshot_json(snap: HostSnapshot) -> dict[str, Any]:
    from workroom.core.badge import BadgeKind
    from workroom.core.errors import Face

    b = snap.badge(time.monotonic(), Face.CLI)
    out: dict[str, Any] = {
        "name": snap.host.name,
        "provider": snap.host.provider,
        "connection": snap.connection.state.value,
        "badge": {"kind": b.kind.value, "label": b.label, "tooltip": b.tooltip, "offers_keep": b.offers_keep},
        "status": snap.status.model_dump(mode="json") if snap.status else None,
        "error": snap.connection.error.model_dump() if snap.connection.error else None,
        "wake_seconds": snap.connection.wake_seconds,
    }
    if snap.install is not None:
        out["pushed_bytes"] = snap.install.pushed_bytes
        out["install_action"] = snap.install.action
    if snap.status is not None:
        out["build"] = snap.status.agent.build
    out["keep_awake"] = _keep_awake_json(snap.connection.heartbeat_proof, time.monotonic())
    clock = snap.connection.platform
    out["platform"] = None if clock is None else {
        **clock.model_dump(mode="json"), "not_kept": snap.connection.platform_not_kept or (
            b.reason if b.kind is BadgeKind.BUSY_NOT_KEPT_AWAKE else None),
        "stops_in_seconds": None if clock.deadline is None else round(max(0.0, clock.deadline - time.time()), 1)}
    return out


def _keep_awake_json(proof: Any, now: float) -> dict[str, Any]:
    """Is the keep-awake seen by the provider? `confirmed` is null when it cannot be known (docs/cli.md)."""
    if proof is None:
        return {"confirmed": None, "state": None, "why": None, "provider_last_seen_age_seconds": None,
                "provider_idle_window_seconds": None}
    age = proof.last_seen_age(now)
    return {"confirmed": proof.confirmed, "state": proof.state.value, "why": proof.why,
            "provider_last_seen_age_seconds": None if age is None else round(age, 1),
            "provider_idle_window_seconds": proof.window_seconds}


NAME_COLUMN = 20


def snapshot_line(snap: HostSnapshot) -> str:
    """One host: its badge, connection and what keeps it busy, in the words the app uses (core.busy_reasons)."""
    from workroom.core.badge import agent_clock
    from workroom.core.busy_reasons import reason_words
    from workroom.core.errors import ERROR_KINDS, Face
    from workroom.core.text_width import pad

    now = time.monotonic()
    b = snap.badge(now, Face.CLI)
    status = snap.status
    words = reason_words(status, agent_now=agent_clock(status, snap.connection, now)) if status else []
    line = f"{pad(snap.host.name, NAME_COLUMN)} {b.label:<28} {snap.connection.state.value:<12}"
    if words:
        line += " " + "; ".join(words[:3])
    error = snap.connection.error
    if error is not None and b.spec.shows_error:
        kind = ERROR_KINDS.get(error.kind)
        advice = error.advice(Face.CLI, snap.host.name) if kind is not None and Face.CLI in kind.advice else ""
        line += f"  ({error.message}{'; ' + advice if advice else ''})"
    clock = snap.connection.platform
    if clock is not None:  # the platform's own clock: "stops in 12 min" (its words may hold brackets: none around)
        from workroom.core.platform_clock import clock_words

        line += f"  · {clock_words(clock, time.time(), ceiling_seconds=status.ceiling_seconds if status else None)}"
    if b.note:  # "agent replaced at 14:02", for a while after
        line += f"  ({b.note})"
    return line


def status_line(engine: Engine, snap: HostSnapshot) -> str:

    line = snapshot_line(snap)
    if snap.connection.spec.asleep:  # no bracket around words that hold their own
        line += f"  · {asleep_words(engine, snap.host.name)}; not woken"
    return line


def with_last_known(engine: Engine, snap: HostSnapshot) -> dict[str, Any]:
    return {**snapshot_json(snap), "last_known": last_known_json(engine.last_known(snap.host.name))}


def agent_stays(pid: int, name: str) -> str:
    """This computer's agent, running on after the command or the app, and the command that stops it (`connect`'s
    last line, `app quit` and `app status`: one sentence wherever it is said)."""
    return (f"this computer's agent (process {pid}) keeps running and recording why this computer is awake; "
            f"`workroom hosts remove {name} --uninstall` stops and removes it")
