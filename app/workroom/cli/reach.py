"""The commands that reach a host: `connect`, `status`, `keep`, `let-sleep`, `why`, `exclusions`. Through the app
they use its sessions (connected already, or connected by the app); without it, an engine of the command's own.
A box its provider says is asleep is never woken without `--wake`."""

from __future__ import annotations

import time

from workroom.cli.face import Face, Refused, usage
from workroom.cli.words import (
    asleep_answer,
    asleep_words,
    last_known_json,
    snapshot_json,
    snapshot_line,
    status_line,
    with_last_known,
)

TYPE_CHECKING = False  # not `typing`'s: the command's start imports nothing it does not use (docs/cli.md)

if TYPE_CHECKING:
    import argparse
    import asyncio
    from collections.abc import AsyncIterator, Callable, Sequence
    from contextlib import AbstractAsyncContextManager
    from typing import Any

    from workroom.core.errors import UserError
    from workroom.core.host_snapshot import HostSnapshot
    from workroom.core.protocol import Status
    from workroom.core.questions import HostKeyQuestion
    from workroom.sessions.engine import Engine
    from workroom.sessions.host_session import HostSession


async def reach(engine: Engine, session: HostSession, command: str, *, wake: bool, timeout: float,
                said: Callable[[str], None] | None = None) -> HostSnapshot:
    """The host's session, connected for a command: at once when it is live (the app's usually is); a box its
    provider says is asleep (or cannot be read) is left so unless `wake`, and answered for from what is known
    (`BoxAsleep`, exit 9) without a word to the box or its provider; otherwise a connect (waking only with `wake`).
    `said`: where what the connect waits on is told meanwhile, once each ("waiting for the keyring …")."""
    from workroom.core.connection import waiting_words

    told: set[str] = set()

    def tell(snap: HostSnapshot) -> None:
        what = snap.connection.waiting_for
        if said is not None and what is not None and what not in told:
            told.add(what)
            said(f"workroom: {snap.host.name}: {waiting_words(what)}…")

    session.listeners.append(tell)
    try:
        return await _reach(engine, session, command, wake=wake, timeout=timeout)
    finally:
        session.listeners.remove(tell)


async def _reach(engine: Engine, session: HostSession, command: str, *, wake: bool, timeout: float) -> HostSnapshot:
    if session.connection.spec.live:
        return session.snapshot()
    if session.connection.spec.may_be_asleep and not wake:
        if not session.connection.spec.asleep and session.connection.error is not None:
            raise session.failure or _unreadable(session)
        raise asleep_answer(engine, session.host.name, command)
    if session.connection.spec.retrying:  # the person asked now: no waiting out the back-off
        await session.disconnect()
    snap = await session.connect(timeout=timeout, wake=wake)
    if snap.connection.spec.asleep:
        raise asleep_answer(engine, session.host.name, command)
    return snap


def _kept_words(name: str, status: Status) -> str:
    """`workroom keep`'s line: the ceiling counts again from now; how long the box has been busy is another time
    (core.box_times), which Keep awake does not restart."""
    from workroom.core.box_times import busy_seconds
    from workroom.core.durations import format_duration

    busy = busy_seconds(status, status.monotonic)
    doing = f"busy for {format_duration(busy)}" if busy is not None else "not busy now"
    return (f"{name}: kept awake; its {format_duration(status.ceiling_seconds)} awake ceiling counts again from "
            f"now ({doing})")


def _unreadable(session: HostSession) -> UserError:
    from workroom.core.errors import UserError

    error = session.connection.error
    assert error is not None
    return UserError(error.title, error.message, error.hint)


class NeverSleeps(Exception):
    """The command changes something only on a box that sleeps, and this host never does."""


def connected(face: Face, name: str, command: str, wake: bool = False, *,
               only_if_it_sleeps: bool = False) -> AbstractAsyncContextManager[HostSession]:
    """A session to host `name`, connected, for one command: the app's own session when the app runs the command
    (it stays connected), else one of the command's own engine (closed when the command is done).

    A box its provider says is asleep is left asleep unless `wake`: then `BoxAsleep` (exit 9) answers from
    what the app last knew. Where the provider cannot tell, it connects. `only_if_it_sleeps`: raise
    `NeverSleeps` before connecting to a host that never sleeps."""
    import contextlib  # here, not at the top: `workroom --version` imports nothing it does not use

    @contextlib.asynccontextmanager
    async def connected() -> AsyncIterator[HostSession]:
        async with face.engine_for() as engine:
            session = engine.session(name)
            if only_if_it_sleeps and not session.traits.metering.sleeps:
                raise NeverSleeps(name)
            await reach(engine, session, command, wake=wake, timeout=30, said=face.err)
            yield session

    return connected()


async def cmd_connect(args: argparse.Namespace, face: Face) -> int:
    import json

    from workroom.core.errors import ExitCode

    async with face.engine_for() as engine:
        session = engine.session(args.name)

        async def answer(_session: HostSession, question: HostKeyQuestion) -> bool:
            if args.trust_new_host_key:
                face.err(f"workroom: trusting new host key {question.fingerprint}")
                return True
            return False

        asked_before, session.host_key_answerer = session.host_key_answerer, answer
        try:
            snap = await reach(engine, session, "connect", wake=args.wake, timeout=args.timeout, said=face.err)
        finally:
            session.host_key_answerer = asked_before
        left = _left_running(engine, session) if not face.in_app else None
        if args.json:
            face.out(json.dumps({**snapshot_json(snap), "left_running": left}))
        else:
            face.out(snapshot_line(snap))
            if left is not None:
                face.out(f"  {left['words']}")
        if args.watch:
            def show(s: HostSnapshot) -> None:
                face.out(json.dumps(snapshot_json(s)) if args.json else snapshot_line(s))

            if not face.in_app:
                session.auto_reconnect = True
            await _listening(session.listeners, show)
        return ExitCode.OK


def _left_running(engine: Engine, session: HostSession) -> dict[str, Any] | None:
    """What this command started on purpose and leaves running after it exits (this computer's agent: it goes on
    recording why this computer is awake), named in its output; None when nothing."""
    if not session.provider.spec.is_this_computer:
        return None
    from workroom.providers.local import running_agent_pid

    pid = running_agent_pid(engine.paths.state_dir)
    if pid is None:
        return None
    from workroom.cli.words import agent_stays

    return {"this_computer_agent": pid, "words": agent_stays(pid, session.host.name)}


async def _listening(listeners: list[Callable[[HostSnapshot], None]],
                     listener: Callable[[HostSnapshot], None]) -> None:
    """`--watch`: `listener` hears every change until the command is ended (Ctrl-C, or its `workroom` process gone
    from the app); then it hears no more (the app's sessions go on)."""
    import asyncio

    listeners.append(listener)
    try:
        await asyncio.get_running_loop().create_future()
    finally:
        listeners.remove(listener)


async def cmd_status(args: argparse.Namespace, face: Face) -> int:
    """Every host's line. The app's engine answers from what it holds (it owns the connections). Without the app a
    plain `status` is a look (cli/look.py: what is known and the providers' own clocks, no box reached); with
    `--live` or `--watch` a command's own engine connects to each host (waking none), each on its own deadline, and
    prints each line as it comes: a host that never answers holds no one else's line and comes last, saying why."""
    import asyncio
    import json

    from workroom.core.errors import ExitCode, UserError

    if not face.in_app and not args.live and not args.watch:
        from workroom.cli.look import cmd_look

        return await cmd_look(args, face)

    not_started: set[str] = set()

    def show(engine: Engine, snap: HostSnapshot) -> None:
        name = snap.host.name
        if args.json:
            face.out(json.dumps({**with_last_known(engine, snap), "agent_not_running": name in not_started}))
        else:
            face.out(status_line(engine, snap) + (f"  (its agent is not running: the app, or `workroom connect {name}`"
                                                  ", starts it)" if name in not_started else ""))

    async with face.engine_for(auto_reconnect=args.watch) as engine:
        if face.in_app:
            snaps = engine.snapshots()
            if args.json:
                face.out(json.dumps([with_last_known(engine, s) for s in snaps]))
            else:
                for snap in snaps:
                    show(engine, snap)
        else:
            async def one(name: str) -> HostSnapshot:
                session = engine.session(name)
                if session.provider.spec.is_this_computer:
                    from workroom.providers.local import running_agent_pid

                    # A command that exits leaves no agent of this computer's that it started.
                    if running_agent_pid(engine.paths.state_dir) is None:
                        not_started.add(name)
                        return session.snapshot()
                try:
                    return await session.connect(timeout=30)  # never wakes an asleep box: its row says so
                except UserError:
                    return session.snapshot()

            tasks = [asyncio.ensure_future(one(n)) for n in engine.hosts.names()]
            try:
                if args.json:
                    snaps = await asyncio.gather(*tasks)
                    face.out(json.dumps([with_last_known(engine, s) for s in snaps]))
                else:
                    async for snap in in_order(tasks, ORDER_GRACE_SECONDS):
                        show(engine, snap)
            finally:
                for task in tasks:
                    task.cancel()
        if args.watch:  # then one line per change: with --json, each a JSON object (the stream is JSON Lines)
            await _listening(engine.listeners, lambda snap: show(engine, snap))
        return ExitCode.OK


ORDER_GRACE_SECONDS = 2.0
"""How long `status` keeps its lines in the hosts' order (as the app's are) while some host is not known yet; a host
still waiting then comes after, when it is known (its own deadline holds nobody else's line)."""

async def in_order(tasks: Sequence[asyncio.Future[HostSnapshot]], grace: float) -> AsyncIterator[HostSnapshot]:
    """The tasks' results in their order while each comes within `grace` of the start; the ones not in by then
    follow as they end."""
    import asyncio

    loop = asyncio.get_running_loop()
    until = loop.time() + grace
    late: list[asyncio.Future[HostSnapshot]] = []
    for task in tasks:
        left = until - loop.time()
        if not task.done() and left > 0:
            await asyncio.wait({task}, timeout=left)
        if task.done():
            yield task.result()
        else:
            late.append(task)
    for done in asyncio.as_completed(late):
        yield await done


async def cmd_keep(args: argparse.Namespace, face: Face) -> int:
    import json

    from workroom.core.errors import ExitCode
    from workroom.core.protocol import Method

    try:
        async with connected(face, args.name, "keep", args.wake, only_if_it_sleeps=True) as session:
            status = await session.call(Method.KEEP)
            face.out(json.dumps({"name": args.name, "kept": True, "awake_seconds": status.awake_seconds})
                     if args.json else
                     _kept_words(args.name, status))
            return ExitCode.OK
    except NeverSleeps:  # Keep awake only where it changes something
        face.out(json.dumps({"name": args.name, "kept": False, "never_sleeps": True}) if args.json else
                 f"{args.name} never sleeps, so there is nothing to keep awake (its awake ceiling is only a note); "
                 "nothing was sent to it.")
        return ExitCode.OK


async def cmd_let_sleep(args: argparse.Namespace, face: Face) -> int:
    """Never wakes: an asleep box is already what the user asked for."""
    import json

    from workroom.core.errors import BoxAsleep, ExitCode
    from workroom.core.protocol import Method

    async with face.engine_for() as engine:
        session = engine.session(args.name)
        if not session.traits.metering.sleeps:
            raise Refused(f"{args.name} never sleeps, so there is nothing to let sleep.")
        try:
            await reach(engine, session, "connect", wake=False, timeout=30, said=face.err)
        except BoxAsleep:
            face.out(json.dumps({"name": args.name, "asleep": True, "suppressed": True,
                                 "last_known": last_known_json(engine.last_known(args.name))}) if args.json
                     else f"{asleep_words(engine, args.name)}: already what you asked for; nothing sent.")
            return ExitCode.OK
        status = await session.call(Method.LET_SLEEP)
        if args.json:
            face.out(json.dumps({"name": args.name, "asleep": False, "suppressed": status.suppressed}))
        elif status.suppressed:
            face.out(f"{args.name}: let sleep; its agent no longer keeps it awake, so it sleeps within its idle "
                     "window")
        else:
            face.out(f"{args.name}: idle already; nothing keeps it awake")
        return ExitCode.OK


async def cmd_why(args: argparse.Namespace, face: Face) -> int:
    import json

    from workroom.core import timeline as tl
    from workroom.core.errors import ExitCode
    from workroom.core.protocol import Method

    try:
        window = tl.parse_since(args.since)
    except ValueError as error:
        return usage(face, f"--since: {error}", as_json=args.json)
    async with connected(face, args.name, "why", args.wake) as session:
        # Asked from a little earlier than the window, in case the box's clock runs ahead of ours.
        reply = await session.call(Method.TIMELINE, since=time.time() - window - 3600)
        summary = tl.summarise(reply, window)
        period = tl.period_words(window)
        cost = tl.cost_words(summary, session.host.hourly_price)
        if args.json:
            face.out(json.dumps({
                "name": session.host.name, "since_seconds": window, "now": summary.end,
                "headline": summary.headline(period), "awake_seconds": summary.awake_seconds,
                "up_seconds": summary.up_seconds, "totals": {k.value: v for k, v in summary.totals.items()},
                "activities": [{"activity": what, "seconds": sec} for what, sec in summary.activities],
                "segments": [{"start": g.start, "end": g.end, "kind": g.kind.value, "words": g.words,
                              "class": g.reason_class, "subject": g.subject, "peer": g.peer, "port": g.port,
                              "local_port": g.local_port} for g in summary.segments],
                "hourly_price": session.host.hourly_price, "cost": cost, "problem": summary.problem,
                "platform_stop": session.known_at_start.stop_note(summary.start, summary.end),
            }))
            return ExitCode.OK
        face.out(f"{session.host.name}: {summary.headline(period)}")
        others = summary.other_lines()
        if others:
            face.out("  " + ", ".join(others))
        face.out(f"  [{tl.text_strip(summary)}]  ({tl.STRIP_LEGEND})")
        if cost:
            face.out(f"  cost {cost}")
        if summary.problem:
            face.out(f"  note: {summary.problem}")
        stopped = session.known_at_start.stop_note(summary.start, summary.end)
        if stopped:
            face.out(f"  {stopped}")
        return ExitCode.OK


async def cmd_exclusions(args: argparse.Namespace, face: Face) -> int:
    """Read the host's "never work" names, or change them by what was added and removed (the agent applies both
    to the list it holds then: a change made meanwhile elsewhere is kept)."""
    import json

    from workroom.core.errors import ExitCode
    from workroom.core.protocol import Method

    async with connected(face, args.name, "exclusions", args.wake) as session:
        if args.add or args.remove:
            current = await session.call(Method.EXCLUSIONS, add=list(args.add), remove=list(args.remove))
        else:
            current = await session.call(Method.EXCLUSIONS)
        if args.json:
            face.out(json.dumps({"name": session.host.name, "never_work": list(current.names),
                                 "problem": current.problem}))
        else:
            listed = ", ".join(current.names) if current.names else "nothing"
            face.out(f"{session.host.name}: never work: {listed}")
            if current.problem:
                face.out(f"  note: {current.problem}")
        return ExitCode.OK
