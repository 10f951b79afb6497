"""Boxes that live on a platform reached through the user's own logged-in CLI (Coder's `coder`, GitHub's `gh`):
what the two providers share (docs/providers.md, "Coder and Codespaces").

The app holds no platform token: every question goes to the CLI, bounded in time (providers/bounded_cli.py).
The box's state is read from the platform's list, never by connecting; a connect goes only to a box the list
says is running, through a ProxyCommand the app builds itself (never one from ~/.ssh/config, which would start a
stopped box), and only the user's explicit wake runs the platform's own start command. The box's SSH key is
vouched for by the platform's channel (remote.host_keys.ChannelVouchedKeys, docs/security.md).
"""

from __future__ import annotations

import asyncio
import getpass
import json
import logging
import shlex
import shutil
import time
from abc import ABC, abstractmethod
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from workroom.core.errors import UserError
from workroom.core.host_text import plain
from workroom.core.hosts import BoxNameError, Host, box_names
from workroom.core.platform_clock import PlatformClock, PlatformRules, PlatformState
from workroom.core.provider_specs import ProviderSpec, ReferenceField
from workroom.providers.base import BoxState, ProviderContext, ProviderUnreadable
from workroom.providers.bounded_cli import CliAnswer, CliProblem
from workroom.providers.ssh_family import SshProvider

if TYPE_CHECKING:
    from workroom.providers.platform_key_pins import PlatformKeyPins
    from workroom.remote.host_shell import HostShell
    from workroom.remote.ssh_config import SshTarget

log = logging.getLogger(__name__)

CLI_TIMEOUT_SECONDS = 20.0
"""A list or an extend through the platform's API: seconds, not minutes; past this the CLI is hanging."""
CONNECT_TIMEOUT_SECONDS = 30.0
"""The platform's tunnel comes up before SSH's banner does (longer than a plain SSH dial)."""
START_POLL_SECONDS = 2.0


class PlatformUnreadable(ProviderUnreadable):
    """The platform's list does not say running or stopped (another state, or the CLI could not be read): the box
    may be starting or stopping, so nothing connects to it, a wake included; the list is read again."""

    def __init__(self, cli: str, why: str) -> None:
        super().__init__(cli, why)
        self.hint = ("The app reads the platform's list again on its own, and connects once it says the box runs "
                     "(connecting now could start it).")


class PlatformError(UserError):
    """The platform's CLI cannot do what is needed until a person changes something (log in, update it)."""

    retryable = False


def parse_time(value: object) -> float | None:
    """An RFC 3339 time from a platform's JSON as Unix seconds; None for null, Go's zero time or anything else."""
    if not isinstance(value, str) or not value or value.startswith("0001-01-01"):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError):
        return None


EARLIEST_PLATFORM_TIME = 1420070400.0  # 2015-01-01: before either platform existed
LATEST_AHEAD_SECONDS = 366 * 86400.0  # a stop time or limit further ahead than a year is none a person means
LATEST_PAST_SECONDS = 86400.0  # a time that already happened, a day ahead at most (clocks disagree)


def platform_time(value: object, now: float, what: str, *, ahead: bool = True) -> tuple[float | None, str | None]:
    """A time from a platform's JSON, checked: (Unix seconds or None, None) for a time, for null and for Go's zero
    time (the platform's own "none"); (None, words) for anything else — not a string, not RFC 3339, NaN, or out of
    range (before 2015, or further ahead than a year for a stop time (`ahead`) and than a day for one that
    happened) — so an odd time is "unknown" in the platform's words, never "no deadline" and never nonsense."""
    if value is None or (isinstance(value, str) and (not value or value.startswith("0001-01-01"))):
        return None, None
    if not isinstance(value, str):
        return None, f"its {what} is not a time ({plain(repr(value), 40)})"
    seconds = parse_time(value)
    if seconds is None or seconds != seconds:
        return None, f"its {what} is not a time ({plain(value, 40)})"
    latest = now + (LATEST_AHEAD_SECONDS if ahead else LATEST_PAST_SECONDS)
    if not EARLIEST_PLATFORM_TIME <= seconds <= latest:
        return None, f"its {what} ({plain(value, 40)}) is not a time it can mean"
    return seconds, None


def parse_json(answer: CliAnswer) -> object:
    """The CLI's JSON answer; `CliProblem` in its own words when it failed or did not answer JSON."""
    if not answer.ok:
        raise CliProblem(answer.said())
    text = answer.stdout.strip()
    if not text:
        return []  # an older `coder list` says "No workspaces found!" on stderr and prints nothing
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise CliProblem(f"its answer is not JSON ({plain(text.decode('utf-8', 'replace'), 80)})") from None


class PlatformProvider(SshProvider, ABC):
    """A box on a platform whose CLI reads, starts (and maybe extends) it: abstract, each platform's class says how
    (no row names this one)."""

    cli: str = ""
    """The CLI's command name."""
    box_field: ReferenceField
    """The reference field naming the box on the platform (empty: the host's name)."""
    default_rules: PlatformRules
    default_user: str | None = None
    """The login on the box when the host names none (None: this computer's user)."""
    connects_only_when_awake = True

    def __init__(self, context: ProviderContext, spec: ProviderSpec, rules: PlatformRules | None = None) -> None:
        super().__init__(context, spec)
        self.rules = rules or self.default_rules
        self.platform_rules = self.rules
        self._readings: dict[str, PlatformClock] = {}
        self._key_pins: PlatformKeyPins | None = None  # made with the first connect (a look needs none)

    # -- naming and reaching the box ------------------------------------------------------------------------

    def box_name(self, host: Host) -> str:
        """The box's name on the platform, held to its naming rule at every use (core.platform_names): one that
        breaks it is refused with words (BoxNameError) and never reaches a command line or a URL."""
        return box_names(host)[self.box_field.name]

    @abstractmethod
    def proxy_argv(self, host: Host) -> list[str]:
        """The platform's own stdio tunnel to the box, which must not start it (blocking: may ask the CLI)."""

    def identity_files(self, host: Host) -> tuple[Path, ...]:
        if host.identity is not None:
            return (Path(host.identity.value).expanduser(),)
        return ()

    def target(self, host: Host) -> SshTarget:
        from workroom.remote.ssh_config import SshTarget

        argv = self.proxy_argv(host)
        exe = shutil.which(argv[0])
        if exe is None:
            raise PlatformError(f"No `{self.cli}` command", f"`{self.cli}` is not installed (not found on PATH).",
                                f"Install the {self.spec.kind} command line and log in, then connect again.")
        return SshTarget(alias=host.name, hostname=f"{self.spec.kind}.{self.box_name(host)}", port=22,
                         user=host.user or self.default_user or getpass.getuser(),
                         identity_files=self.identity_files(host), identities_only=host.identity is not None,
                         proxy_command=shlex.join([exe, *argv[1:]]))

    def open_shell(self, host: Host) -> HostShell:
        from workroom.providers.platform_key_pins import PlatformKeyPins
        from workroom.providers.ssh_shell import SshShell
        from workroom.remote.host_keys import ChannelVouchedKeys
        from workroom.remote.ssh_connection import SshConnection

        if self._key_pins is None:
            self._key_pins = PlatformKeyPins(self.context.state_dir)
        reading = self._readings.get(host.name)
        run = reading.build if reading is not None and reading.build else ""
        connection = SshConnection.connect(self.target(host), ChannelVouchedKeys(self._key_pins, run),
                                           timeout=CONNECT_TIMEOUT_SECONDS, ask_secret=self.context.secret_lookup)
        return SshShell(connection)

    # -- the platform's clock -------------------------------------------------------------------------------

    @abstractmethod
    async def read_clock(self, host: Host) -> PlatformClock:
        """The box as the platform's list says (raises CliProblem when the CLI cannot be asked)."""

    async def platform_clock(self, host: Host) -> PlatformClock:
        try:
            clock = await self.read_clock(host)
        except BoxNameError as refused:  # never asked: the name breaks the platform's rule
            clock = PlatformClock(state=PlatformState.UNKNOWN, said=plain(refused.message, 300), read_at=time.time())
        except CliProblem as problem:
            clock = self.unreadable(problem.words)
        except Exception:  # a parser's bug must not become a traceback in a row: unknown, and the log says why
            log.exception("reading %s's state from `%s` failed", host.name, self.cli)
            clock = self.unreadable("its answer could not be read (see the app's log)")
        self._readings[host.name] = clock
        return clock

    def unreadable(self, words: str) -> PlatformClock:
        return PlatformClock(state=PlatformState.UNKNOWN, said=plain(f"{self.cli} says: {words}", 300),
                             read_at=time.time())

    async def box_state(self, host: Host) -> BoxState:
        """Running is awake and stopped asleep; any other state (starting, failed, one the app does not know, or
        a CLI that cannot be read) is `ProviderUnreadable` in the platform's words: the session then connects to
        nothing (a connect could start it) and reads the list again until it says running or stopped."""
        clock = await self.platform_clock(host)
        if clock.state is PlatformState.RUNNING:
            return BoxState.AWAKE
        if clock.state is PlatformState.STOPPED:
            return BoxState.ASLEEP
        raise PlatformUnreadable(self.cli, self.state_words(host) or clock.said)

    def last_platform_clock(self, host: Host) -> PlatformClock | None:
        return self._readings.get(host.name)

    def state_words(self, host: Host) -> str | None:
        reading = self._readings.get(host.name)
        if reading is None:
            return None
        said = reading.said.removeprefix(f"{self.cli} says: ")
        return said if not reading.readable or said != reading.said else f"it says it is {said}"

    # -- the user's explicit wake ---------------------------------------------------------------------------

    @abstractmethod
    async def start_box(self, host: Host) -> CliAnswer:
        """Ask the platform to start the box (its own start command)."""

    async def wake(self, host: Host) -> None:
        """The user asked to wake it: the platform's own start command, then wait until its list says running."""
        log.info("%s: starting %s through `%s` (the user's wake)", host.name, self.box_name(host), self.cli)
        try:
            answer = await self.start_box(host)
        except CliProblem as problem:
            raise PlatformError(f"{self.cli} could not start it", f"{host.name}: {problem.words}.",
                                "Check the platform's command line, then try again.") from None
        if not answer.ok:
            raise PlatformError(f"{self.cli} could not start it", f"{host.name}: {answer.said()}.",
                                "Check the platform's command line, then try again.")
        deadline = time.monotonic() + self.rules.start_timeout_seconds
        pause = min(START_POLL_SECONDS, max(0.05, self.rules.start_timeout_seconds / 50))
        while True:
            clock = await self.platform_clock(host)
            if clock.state is PlatformState.RUNNING:
                return
            if clock.state in (PlatformState.FAILED, PlatformState.DELETED) or time.monotonic() > deadline:
                raise UserError("Not started", f"{host.name}: the platform's start did not finish "
                                f"({clock.said}).", "See the platform's own page for the box, then connect again.")
            await asyncio.sleep(pause)

    # -- the platform's keep-alive --------------------------------------------------------------------------

    # -- for the add-host picker ----------------------------------------------------------------------------

    @abstractmethod
    async def list_boxes(self) -> list[tuple[str, str]]:
        """Every box the user's CLI lists: (name, the platform's state word). CliProblem when it cannot."""


def go_duration(seconds: float) -> str:
    """Seconds as a duration Go's time.ParseDuration reads ("1h30m", "95s"): what the CLIs take."""
    whole = max(1, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if n) or "0s"
