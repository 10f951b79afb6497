"""A look without the app: `workroom status` reads what is known and each provider's own clock, and reaches no box.

The promise is that nothing of ours keeps an idle box up, and a look that connected would: a status every 15 s
from a shell prompt or a tmux line moves a network-metered box's idle clock each time, and on Coder or Codespaces
each connection is a session the platform counts as activity. So without the app, `status` (and `--json`)
answers from:

- the one record every face keeps (`known_records`, core.last_known): what the box was doing when its agent last
  spoke, what kept it busy, and how long ago — written by the app or by a command that connected;
- the provider's own clock, read through its control plane only, never the box's wire: whether the box is asleep
  and its idle clock (the simulator's health page, `boxd machine status`, a request-metered platform's idle-clock
  page) or the platform's stop time (`coder list`, `gh codespace view`).

It opens no SSH connection, starts no agent and installs nothing, on any host, and leaves no process behind.
`status --live` and `--watch` connect, as asked (docs/cli.md, "A look is never a touch").
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from workroom.cli.face import Face
from workroom.cli.words import NAME_COLUMN, last_known_json

TYPE_CHECKING = False  # not `typing`'s: the command's start imports nothing it does not use (docs/cli.md)

if TYPE_CHECKING:
    import argparse
    from typing import Any

    from workroom.core.heartbeat_proof import IdleClockReading
    from workroom.core.hosts import Host
    from workroom.core.last_known import LastKnown
    from workroom.core.platform_clock import PlatformClock
    from workroom.paths import AppPaths
    from workroom.providers.base import Provider

LIVE_HINT = "`workroom status --live` looks now"


@dataclass(frozen=True)
class Seen:
    """What a look found of one host, without touching it."""

    host: Host
    known: LastKnown
    box: str | None
    """What its provider says: "awake", "asleep", "unknown" (cannot tell without waking it), or None (could not
    be read now: `unreadable` says why)."""
    unreadable: str | None = None
    idle: IdleClockReading | None = None
    platform: PlatformClock | None = None
    read_at_monotonic: float = 0.0


async def _provider_says(provider: Provider, host: Host, known: LastKnown) -> Seen:
    """The provider's word on the box and its clock, through its control plane only (`Provider.box_state`,
    `read_idle_clock` and `last_platform_clock` never touch the box)."""
    from workroom.providers.base import BoxState, ProviderUnreadable

    box: str | None
    unreadable = None
    try:
        box = (await provider.box_state(host)).value
    except ProviderUnreadable as error:
        box, unreadable = None, error.message.rstrip(".")
    idle = None
    if box in (BoxState.AWAKE.value, BoxState.UNKNOWN.value) and host.traits.metering.sleeps:
        idle = await provider.read_idle_clock(host)
    return Seen(host, known, box, unreadable, idle, provider.last_platform_clock(host), time.monotonic())


async def look(paths: AppPaths, face: Face) -> list[Seen]:
    """Every host as a look finds it, in the hosts file's order; each provider read on its own deadline (its
    control plane's own bound). A box its provider says is asleep is marked so in the record, as the app does."""
    import asyncio

    from workroom.cli.face import say_error
    from workroom.core.last_known import LastKnown
    from workroom.known_records import read_records, verdicts_path, write_record
    from workroom.providers import make_provider
    from workroom.providers.base import ProviderContext
    from workroom.storage import load_hosts

    loaded = load_hosts(paths.ensure())  # the hosts only: a look needs no settings
    if loaded.problem is not None:
        say_error(loaded.problem, face)
    hosts = loaded.value.hosts
    records_path = verdicts_path(paths.state_dir)
    records = read_records(records_path)
    # No agent bundle, known hosts, secrets or agent keys: a look opens no connection, so it needs none of them.
    context = ProviderContext(bundle=None, known_hosts=None, state_dir=paths.state_dir)
    providers: dict[str, Provider] = {}

    def provider(kind: str) -> Provider:
        if kind not in providers:
            providers[kind] = make_provider(kind, context)
        return providers[kind]

    seen = await asyncio.gather(*(_provider_says(provider(h.provider), h, LastKnown.from_record(records.get(h.name)))
                                  for h in hosts))
    now = time.time()
    marked = []
    for one in seen:
        after = one.known.asleep(now) if one.box == "asleep" else one.known
        if after != one.known:
            write_record(records_path, one.host.name, after.to_record())
        marked.append(Seen(one.host, after, one.box, one.unreadable, one.idle, one.platform, one.read_at_monotonic))
    return marked


def _clock(unix: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(unix).strftime("%H:%M")


def _ago(seconds: float) -> str:
    from workroom.core.durations import format_duration

    return "just now" if seconds < 1 else f"{format_duration(seconds)} ago"


def sleeps_in(seen: Seen, now_monotonic: float) -> float | None:
    """Seconds until its provider's idle clock runs out (0: due now), or None when the clock or window is unknown."""
    if seen.idle is None:
        return None
    window = seen.idle.window_seconds or seen.host.traits.idle_window_seconds
    if window is None:
        return None
    idle_now = seen.idle.idle_seconds + max(0.0, now_monotonic - seen.idle.read_at)
    return max(0.0, window - idle_now)


def state_words(seen: Seen, now: float) -> str:
    """"Idle (seen 3 min ago)", "Busy (seen 10 s ago): compiling: cc1plus", "Asleep (since 14:02); last known
    busy (12 min ago)", "Nothing known yet"."""
    known = seen.known
    if seen.box == "asleep":
        since = f" (since {_clock(known.asleep_since)})" if known.asleep_since is not None else ""
        last = known.words(now)
        return f"Asleep{since}" + (f"; {last}" if last else "; nothing known of it before")
    if not known.known:
        return "Nothing known yet"
    doing = (known.doing or "").capitalize()
    seen_words = f" (seen {_ago(max(0.0, now - known.seen_at))})" if known.seen_at is not None else ""
    reasons = f": {'; '.join(known.reasons)}" if known.reasons and known.doing == "busy" else ""
    return f"{doing}{seen_words}{reasons}"


def clock_words(seen: Seen, now: float, now_monotonic: float) -> str | None:
    """The provider's own clock in words, or why it could not be read; None when it has nothing to say."""
    from workroom.core.durations import format_duration
    from workroom.core.platform_clock import clock_words as platform_words
    from workroom.core.platform_clock import stop_words

    if seen.unreadable is not None:
        return f"could not read the provider: {seen.unreadable}"
    if seen.platform is not None and seen.box == "asleep":
        return stop_words(seen.platform)  # why it stopped, where the platform says; "Asleep" says the rest
    if seen.platform is not None:
        return f"by the platform's clock: {platform_words(seen.platform, now)}"
    left = sleeps_in(seen, now_monotonic)
    if left is not None:
        return ("due to sleep now by its provider's clock" if left < 1 else
                f"asleep in about {format_duration(left)} by its provider's clock")
    if seen.idle is not None:
        return f"idle {format_duration(seen.idle.idle_seconds)} by its provider's clock"
    return None


def look_line(seen: Seen, now: float, now_monotonic: float) -> str:
    """One host's line: its name, what is known with its age, and its provider's own clock."""
    from workroom.core.text_width import pad

    parts = [state_words(seen, now)]
    clock = clock_words(seen, now, now_monotonic)
    if clock:
        parts.append(clock)
    if not seen.known.known and seen.box != "asleep":
        parts.append(LIVE_HINT)
    return f"{pad(seen.host.name, NAME_COLUMN)} {' · '.join(parts)}"


def look_json(seen: Seen, now: float, now_monotonic: float) -> dict[str, Any]:
    """One host's object: `live` false and `connection` null (none was opened), what is known (`last_known`, with
    `reasons`), the provider's word (`box`, `provider_error`) and clocks (`idle_clock`, `platform`), and the line's
    words (`words`)."""
    left = sleeps_in(seen, now_monotonic)
    clock = seen.platform
    return {
        "name": seen.host.name, "provider": seen.host.provider, "live": False, "connection": None, "box": seen.box,
        "provider_error": seen.unreadable,
        "words": look_line(seen, now, now_monotonic)[NAME_COLUMN + 1:].strip(),
        "last_known": {**last_known_json(seen.known), "reasons": list(seen.known.reasons)},
        "idle_clock": None if seen.idle is None else {
            "idle_seconds": round(seen.idle.idle_seconds, 1), "window_seconds": seen.idle.window_seconds,
            "sleeps_in_seconds": None if left is None else round(left, 1)},
        "platform": None if clock is None else {
            **clock.model_dump(mode="json"),
            "stops_in_seconds": None if clock.deadline is None else round(max(0.0, clock.deadline - now), 1)},
    }


async def cmd_look(args: argparse.Namespace, face: Face) -> int:
    """`workroom status` without the app, and without `--live` or `--watch`."""
    import json

    from workroom.core.errors import ExitCode
    from workroom.paths import app_paths

    seen = await look(app_paths(), face)
    now, now_monotonic = time.time(), time.monotonic()
    if args.json:
        face.out(json.dumps([look_json(s, now, now_monotonic) for s in seen]))
    else:
        for one in seen:
            face.out(look_line(one, now, now_monotonic))
    return ExitCode.OK
