"""Every setting a person can change, one row each (`SETTING_ROWS`): the settings pane's fields, the flags of
`workroom settings set`, the lines of `workroom settings get`, the checks and settings.json's models all read
these rows, so a new setting is one row here (and its typed attribute on the model that stores it).

A row says where its value lives (`Store`): the awake-ceiling settings this computer hands to every host's
agent, this computer's own settings (notifications, the idle-sleep hold, the terminal), or the system's own
state (open at login: the login item, as the system reports it, never a copy in settings.json). A row that
needs something of this computer (`Capability`) is shown everywhere but edited only where the platform
layer says this computer has it; elsewhere the faces say why (`CAPABILITY_MISSING`).

Pure data, imported by `workroom --help` too: no pydantic, no I/O (checks are in core.setting_checks).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from workroom.core.durations import format_duration


class Kind(Enum):
    """What a setting's value is, and so how every face reads and writes it."""

    DURATION = "duration"
    """Seconds (a float) between the row's bounds; the pane shows it in the row's `units`."""
    YES_NO = "yes/no"
    TEXT = "text"


class Store(Enum):
    """Where a setting's value lives."""

    AGENTS = "ceiling"
    """settings.json's `ceiling`, handed to every host's agent (the pane's Apply to all hosts)."""
    NOTICES = "notices"
    """settings.json's `notices`: which notifications this computer shows (applied at once)."""
    THIS_COMPUTER = "app"
    """settings.json's top level: this computer only (applied at once)."""
    SYSTEM = "system"
    """The system's own state (named by the row's `needs`), read back each time; not in settings.json."""

    @property
    def applies_to(self) -> str:
        return "every host" if self is Store.AGENTS else "this computer"


class Capability(Enum):
    """Something a setting needs of this computer; the platform layer answers whether it has it."""

    LOGIN_ITEM = "login item"
    """A way to open the app at login (an XDG autostart entry, macOS's login item)."""
    IDLE_SLEEP_HOLD = "idle-sleep hold"
    """A hold on this computer's idle sleep (IOKit's power assertions: macOS)."""


CAPABILITY_MISSING: Mapping[Capability, str] = {
    Capability.LOGIN_ITEM: "This computer offers no way to open apps at login that Workroom can use.",
    Capability.IDLE_SLEEP_HOLD: "Only macOS lets Workroom hold off a computer's idle sleep; this computer has "
                                "no such hold.",
}
"""Why a row that needs a capability cannot be changed on a computer without it, in the faces' words."""

UNIT_SECONDS: Mapping[str, int] = {"d": 86400, "h": 3600, "min": 60, "s": 1}

MIN_DURATION_SECONDS = 30.0
"""Shortest ceiling or prompt timeout accepted (same as the agent)."""
MAX_DURATION_SECONDS = 30 * 24 * 3600.0
"""Longest ceiling or prompt timeout accepted: 30 days (same as the agent)."""
DEFAULT_CEILING_SECONDS = 4 * 3600.0
DEFAULT_PROMPT_TIMEOUT_SECONDS = 600.0
DEFAULT_ASK_AT_CEILING = False
FINISHED_AFTER_MIN_SECONDS = 60.0
FINISHED_AFTER_MAX_SECONDS = 24 * 3600.0


@dataclass(frozen=True)
class SettingRow:
    """One setting, as every face and the stored file know it."""

    name: str
    """Its key where it is stored (settings.json's object, the agent's `settings` request and status), and in
    `workroom settings get --json`."""
    words: str
    """What it is, for a sentence ("The awake ceiling")."""
    flag: str
    """`workroom settings set --<flag>`."""
    kind: Kind
    default: float | bool | str
    store: Store
    label: str
    """The pane: a duration's or text's label, a yes/no's checkbox words."""
    minimum: float | None = None
    """Bounds of a duration (seconds, inclusive); None for any other kind."""
    maximum: float | None = None
    units: tuple[str, ...] = ()
    """The pane's boxes for a duration, largest first (keys of UNIT_SECONDS)."""
    needs: Capability | None = None
    """Changed only where this computer has it; for a SYSTEM row, also the system state that is its value."""
    under: str | None = None
    """The pane: changed only while this yes/no row is on (a threshold under its notice)."""
    inline: bool = False
    """The pane: on the line of the row before it."""
    tooltip: str = ""
    empty: str = ""
    """A text: what an empty value means."""
    optional_for_older_peers: bool = False
    """An agent that predates it does not report it: such an agent is not sent it, and is not re-sent the
    settings for it (an AGENTS row added later is optional; the first three are not)."""

    @property
    def is_duration(self) -> bool:
        return self.kind is Kind.DURATION

    def bounds_text(self) -> str:
        """"between 30 and 2592000 seconds (30 s – 30 d)", for a duration."""
        assert self.minimum is not None and self.maximum is not None
        return bounds_text(self.minimum, self.maximum)

    def bounds_words(self) -> str:
        """"30 s – 30 d" for a duration, "" for any other kind."""
        if self.minimum is None or self.maximum is None:
            return ""
        return f"{format_duration(self.minimum)} – {format_duration(self.maximum)}"

    def value_words(self, value: object) -> str:
        """A value as the CLI prints it: "14400 s (4 h)", "on", "xterm", "(empty)"."""
        if isinstance(value, bool):
            return "on" if value else "off"
        if isinstance(value, int | float):
            return f"{value:.10g} s ({format_duration(value)})"
        return str(value) if value else "(empty)"


def bounds_text(low: float, high: float) -> str:
    """"between 30 and 2592000 seconds (30 s – 30 d)"."""
    return f"between {low:.0f} and {high:.0f} seconds ({format_duration(low)} – {format_duration(high)})"


SETTING_ROWS: tuple[SettingRow, ...] = (
    SettingRow("ceiling_seconds", "The awake ceiling", "ceiling", Kind.DURATION, DEFAULT_CEILING_SECONDS,
               Store.AGENTS, "Awake ceiling", MIN_DURATION_SECONDS, MAX_DURATION_SECONDS, ("h", "min", "s")),
    SettingRow("prompt_timeout_seconds", "The prompt timeout", "prompt-timeout", Kind.DURATION,
               DEFAULT_PROMPT_TIMEOUT_SECONDS, Store.AGENTS, "Prompt timeout", MIN_DURATION_SECONDS,
               MAX_DURATION_SECONDS, ("min", "s")),
    SettingRow("ask_at_ceiling", "Ask mode", "ask", Kind.YES_NO, DEFAULT_ASK_AT_CEILING, Store.AGENTS,
               "Ask before keeping a box awake past the ceiling",
               tooltip="Only hosts that sleep when idle are asked; hosts that never sleep just report it."),
    SettingRow("finished", "The finished-work notification", "notify-finished", Kind.YES_NO,
               True, Store.NOTICES, "Tell me when a host's work finishes, if it was busy for at least"),
    SettingRow("finished_after_seconds", "The finished-work threshold", "notify-finished-after",
               Kind.DURATION, 600.0, Store.NOTICES, "Busy for at least", FINISHED_AFTER_MIN_SECONDS,
               FINISHED_AFTER_MAX_SECONDS, ("min",), under="finished", inline=True),
    SettingRow("finished_this_computer", "The finished-work notification for this computer",
               "notify-this-computer", Kind.YES_NO, False, Store.NOTICES,
               "Also for this computer", under="finished",
               tooltip="Off by default: you are sitting at it. Each host's details can turn it off for that host."),
    SettingRow("lost_work", "The lost-work notification", "notify-lost-work", Kind.YES_NO, True,
               Store.NOTICES, "Tell me when a box is busy but not kept awake, or fell asleep while busy"),
    SettingRow("open_at_login", "Open at login", "open-at-login", Kind.YES_NO, False, Store.SYSTEM,
               "Open Workroom when I log in", needs=Capability.LOGIN_ITEM),
    SettingRow("hold_idle_sleep", "Holding off this computer's idle sleep", "hold-idle-sleep",
               Kind.YES_NO, False, Store.THIS_COMPUTER,
               "While this Mac keeps a busy box awake, keep it from sleeping when idle",
               needs=Capability.IDLE_SLEEP_HOLD,
               tooltip="A box whose provider counts only requests from outside is kept awake by this Mac's polls, "
                       "and a Coder workspace or a codespace by this Mac's session and extensions; they stop while "
                       "this Mac sleeps. Closing the lid still sleeps it."),
    SettingRow("terminal_app", "The terminal for Open in terminal", "terminal", Kind.TEXT, "",
               Store.THIS_COMPUTER, "Terminal for Open in terminal",
               empty="Terminal on macOS; $TERMINAL or x-terminal-emulator elsewhere"),
)
"""Every setting, in the pane's order. Adding one: docs/architecture.md, "Adding a setting".

Read through the functions below when used, never copied at import: a test adds a row here and every face
has it."""


def rows_in(*stores: Store) -> tuple[SettingRow, ...]:
    """The rows kept in any of `stores`, in the table's order."""
    return tuple(row for row in SETTING_ROWS if row.store in stores)


def row_named(name: str) -> SettingRow | None:
    return next((row for row in SETTING_ROWS if row.name == name), None)
