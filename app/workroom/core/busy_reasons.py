"""Busy reasons in the words a developer uses: one row per reason class, read by every face.

The agent sends each busy reason twice, as text ("cpu: cc1plus (pid 4121)") and as data
(`protocol.BusyReason`: class, subject, pid, detail), and keeps its own table of classes
(`wr_agent/reasons.py`). This is the app's: for each class the words of a host's row, tray line and
badge tooltip (`row`), of the why-awake strip and `workroom why` (`strip`), the colour role the strip
paints it in and that role's legend. The row, the tray, the tooltip, the timeline, `workroom why` and
the CLI's status lines all read these rows, so the app and the command line say the same thing.
`tests/integration/test_protocol_contract.py` drives every class the agent can emit through this
table and fails on a class either side lacks.

An agent older than `structured_reasons` sends only the text: `parse_text` reads it back with each row's
`text` (how agents write that class), the one place the app reads reason text. Pure, unit tested.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

from pydantic import ValidationError

from workroom.core.durations import format_duration
from workroom.core.protocol import BusyReason, Status

__all__ = [
    "ACTIVITIES",
    "CLASSES",
    "COLOUR_LEGEND",
    "OTHER",
    "Activity",
    "ColourRole",
    "ReasonClassSpec",
    "colour_role",
    "parse_text",
    "reason_pairs",
    "reason_words",
    "row_words",
    "strip_words",
]


class ColourRole(StrEnum):
    """What the why-awake strip paints a busy stretch in (ui/styles.py gives each role its hue)."""

    COMPUTE = "compute"
    DISK = "disk"
    WAITING = "waiting"
    NETWORK = "network"
    TERMINAL = "terminal"
    AGENT = "agent"
    OTHER = "other"


COLOUR_LEGEND: dict[ColourRole, str] = {
    ColourRole.COMPUTE: "CPU",
    ColourRole.DISK: "disk",
    ColourRole.WAITING: "a job waiting",
    ColourRole.NETWORK: "network",
    ColourRole.TERMINAL: "terminal",
    ColourRole.AGENT: "agent task",
    ColourRole.OTHER: "other",
}
"""The legend of the strip, one entry per colour role, in this order: what kept a busy stretch busy (the strip's
legend says "busy:" once before them)."""


@dataclass(frozen=True)
class Activity:
    """Work a process's name tells: `cc1plus` using the CPU is compiling. `classes`: where the name means it."""

    words: str
    classes: frozenset[str]
    names: frozenset[str]


ACTIVITIES: tuple[Activity, ...] = (
    Activity("compiling", frozenset({"cpu", "disk"}), frozenset({
        "cc", "cc1", "cc1plus", "cc1obj", "gcc", "g++", "c++", "clang", "clang++", "ld", "ld.lld", "ld.gold",
        "lld", "mold", "as", "collect2", "rustc", "javac", "kotlinc", "go", "compile", "link", "tsc", "esbuild",
        "swiftc", "swift-frontend", "ghc", "zig", "nvcc", "ocamlopt", "scalac"})),
    Activity("building", frozenset({"cpu", "disk"}), frozenset({
        "make", "gmake", "ninja", "cargo", "cmake", "bazel", "gradle", "mvn", "meson", "scons", "msbuild",
        "dotnet", "webpack", "vite"})),
    Activity("testing", frozenset({"cpu", "disk"}), frozenset({
        "pytest", "py.test", "jest", "vitest", "mocha", "rspec", "ctest", "tox", "nox"})),
    Activity("downloading", frozenset({"tcp"}), frozenset({
        "curl", "wget", "git", "git-remote-http", "pip", "pip3", "npm", "yarn", "pnpm", "apt", "apt-get", "http",
        "rsync", "aria2c"})),
    Activity("ssh session", frozenset({"tcp"}), frozenset({
        "ssh", "scp", "sftp", "mosh-client", "mosh-server", "autossh"})),
)
"""Process names (comm: at most 15 characters) and the work they mean; each name in one activity only."""

Facts = Callable[[BusyReason, float | None], list[str]]


def _no_facts(_reason: BusyReason, _agent_now: float | None) -> list[str]:
    return []


@dataclass(frozen=True)
class ReasonClassSpec:
    """One reason class. Words take `{subject}` (the process); `alone` is said when there is no subject.

    `text` is how an agent writes this class in `busy_reasons` (`{subject}`, `{pid}`, and a class's own
    fields); it is read only from an agent that sends no structured reasons. `facts` adds the class's
    detail to its row words (a TCP wait's peer and for how long).
    """

    id: str
    text: str
    row: str
    strip: str
    alone: str
    colour: ColourRole
    facts: Facts = _no_facts


def _is_port(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _host_port(peer: str, port: object) -> str:
    """ "10.0.0.5:443", "[::1]:5432"; the bare address when the port is not known."""
    host = f"[{peer}]" if ":" in peer else peer
    return f"{host}:{port}" if _is_port(port) else host


def _for_how_long(since: object, agent_now: float | None) -> list[str]:
    """ "for 2 min" from when the agent says a wait began (its words never change while it waits)."""
    if (agent_now is not None and isinstance(since, int | float) and not isinstance(since, bool)
            and math.isfinite(since) and agent_now - since >= 1):
        return [f"for {format_duration(agent_now - since)}"]
    return []


def _tcp_facts(reason: BusyReason, agent_now: float | None) -> list[str]:
    """ "10.0.0.5:443", "for 2 min": the connection's peer, and how long it has waited."""
    out: list[str] = []
    peer, port = reason.detail.get("peer"), reason.detail.get("port")
    if isinstance(peer, str) and peer:
        out.append(_host_port(peer, port))
    return out + _for_how_long(reason.detail.get("since"), agent_now)


def _unix_facts(reason: BusyReason, agent_now: float | None) -> list[str]:
    """ "/var/run/postgresql/.s.PGSQL.5432", "for 2 min": the local server's socket a job step waits on, and how
    long."""
    path = reason.detail.get("path")
    return ([path] if isinstance(path, str) and path else []) + _for_how_long(reason.detail.get("since"), agent_now)


OTHER = "other"
"""The class of work no row names: a reason this app does not know, or the why-awake record's `other`."""

CLASSES: dict[str, ReasonClassSpec] = {spec.id: spec for spec in (
    ReasonClassSpec("cpu", "cpu: {subject} (pid {pid})", "running: {subject}", "running {subject}", "CPU work",
                    ColourRole.COMPUTE),
    ReasonClassSpec("disk", "disk: {subject} (pid {pid}) in D state", "waiting on disk: {subject}",
                    "waiting on disk ({subject})", "waiting on disk", ColourRole.DISK),
    ReasonClassSpec("sleep", "sleep: {subject} (pid {pid})", "waiting in a job: {subject}",
                    "waiting in a job ({subject})", "waiting in a job", ColourRole.WAITING),
    ReasonClassSpec("fifo", "fifo: {subject} (pid {pid}) waiting for its partner", "waiting in a pipeline: {subject}",
                    "waiting in a pipeline ({subject})", "waiting in a pipeline", ColourRole.WAITING),
    ReasonClassSpec("lock", "lock: {subject} (pid {pid}) waiting for a file lock", "waiting for a lock: {subject}",
                    "waiting for a lock ({subject})", "waiting for a lock", ColourRole.WAITING),
    ReasonClassSpec("tcp", "tcp: {subject} (pid {pid})", "waiting on the network: {subject}",
                    "waiting on the network ({subject})", "waiting on the network", ColourRole.NETWORK, _tcp_facts),
    ReasonClassSpec("unix", "unix: {subject} (pid {pid})", "waiting on a local server: {subject}",
                    "waiting on a local server ({subject})", "waiting on a local server", ColourRole.WAITING,
                    _unix_facts),
    ReasonClassSpec("tty_output", "tty: output", "terminal output", "terminal output", "terminal output",
                    ColourRole.TERMINAL),
    ReasonClassSpec("keystroke", "tty: keystroke", "someone typing", "someone typing", "someone typing",
                    ColourRole.TERMINAL),
    ReasonClassSpec("net", "net: traffic", "network traffic", "network traffic", "network traffic",
                    ColourRole.NETWORK),
    ReasonClassSpec("operation", "agent: operation in flight", "the agent's own task", "the agent's own task",
                    "the agent's own task", ColourRole.AGENT),
    # Only the hold keeps the verdict: `{after}` is the row words of the reason it holds.
    ReasonClassSpec("hold", "hold: after {after}", "{after} (just now)", "held after work", "held after work",
                    ColourRole.OTHER),
    ReasonClassSpec("resume", "resume: measuring after a wake", "measuring after a wake", "measuring after a wake",
                    "measuring after a wake", ColourRole.OTHER),
    ReasonClassSpec("more", "+{count} more", "+{count} more", "other work", "other work", ColourRole.OTHER),
    ReasonClassSpec("restored", "restored", "work seen before the agent restarted",
                    "work seen before the agent restarted", "work seen before the agent restarted", ColourRole.OTHER),
    ReasonClassSpec(OTHER, "", "other work", "other work", "other work", ColourRole.OTHER),
)}
"""Every reason class, by the id the agent sends. `other` is the app's own: no agent reason is written so."""

COARSE_SUFFIX = " (coarse)"
"""The agent's coarse sampler (no /proc) marks its text so; as data it is `detail.coarse`."""


def _activity(reason_class: str, subject: str) -> Activity | None:
    for act in ACTIVITIES:
        if reason_class in act.classes and subject in act.names:
            return act
    return None


def _held(reason: BusyReason) -> BusyReason | None:
    after = reason.detail.get("after")
    if isinstance(after, BusyReason):
        return after
    if not isinstance(after, dict):
        return None
    try:
        return BusyReason.model_validate(after)
    except ValidationError:
        return None


def row_words(reason: BusyReason, agent_now: float | None = None) -> str | None:
    """One reason in a developer's words ("compiling: cc1plus"), or None for a class this app does not know.

    `agent_now` (the agent's clock now) lets a class with a start time say for how long.
    """
    spec = CLASSES.get(reason.reason_class)
    if spec is None:
        return None
    if spec.id == "hold":
        held = _held(reason)
        words = row_words(held, agent_now) if held is not None else None
        return spec.row.format(after=words or "work")
    if spec.id == "more":
        count = reason.detail.get("count")
        return spec.row.format(count=count) if isinstance(count, int) and not isinstance(count, bool) else None
    subject = reason.subject
    act = _activity(spec.id, subject) if subject else None
    served = reason.detail.get("local_port") if spec.id == "tcp" else None
    if isinstance(served, int) and not isinstance(served, bool) and subject:
        words = f"serving port {served}: {subject}"  # a request came in on our port and is being answered
    elif act is not None:
        words = f"{act.words}: {subject}"
    else:
        words = spec.row.format(subject=subject) if subject and "{subject}" in spec.row else spec.alone
    facts = spec.facts(reason, agent_now)
    return f"{words} ({', '.join(facts)})" if facts else words


def strip_words(reason_class: str, subject: str, *, peer: str | None = None, port: int | None = None,
                local_port: int | None = None) -> str:
    """What a stretch of the why-awake record was, from the class and process it names: ("cpu", "cc1") ->
    "compiling"; ("cpu", "python3") -> "running python3"; an unknown class -> "other work". A network wait's
    span also names its peer: "waiting on the network (psql → 10.0.3.7:5432)", "downloading (curl →
    151.101.1.69:443)", and one that came in our port: "serving port 8080 (node ← 127.0.0.1)"."""
    spec = CLASSES.get(reason_class) or CLASSES[OTHER]
    act = _activity(spec.id, subject) if subject else None
    if peer:
        who = f"{subject} " if subject else ""
        if _is_port(local_port):
            return f"serving port {local_port} ({who}← {_host_port(peer, None)})"
        return f"{act.words if act is not None else spec.alone} ({who}→ {_host_port(peer, port)})"
    if act is not None:
        return act.words
    return spec.strip.format(subject=subject) if subject and "{subject}" in spec.strip else spec.alone


def colour_role(reason_class: str) -> ColourRole:
    spec = CLASSES.get(reason_class) or CLASSES[OTHER]
    return spec.colour


# -- reading an older agent's text (the one place the app reads it) -------------------------------------

_FIELD = re.compile(r"\{(\w+)\}")
_FIELD_PATTERNS = {"subject": r"(?P<subject>.+?)", "pid": r"(?P<pid>\d+)", "after": r"(?P<after>.+)",
                   "count": r"(?P<count>\d+)"}


def _pattern(template: str) -> re.Pattern[str]:
    parts, at = [], 0
    for match in _FIELD.finditer(template):
        parts.append(re.escape(template[at:match.start()]))
        parts.append(_FIELD_PATTERNS[match.group(1)])
        at = match.end()
    parts.append(re.escape(template[at:]))
    return re.compile("".join(parts))


_TEXT_PATTERNS = tuple((spec.id, _pattern(spec.text)) for spec in CLASSES.values() if spec.text)


def parse_text(text: str) -> BusyReason | None:
    """A reason's text as an agent writes it -> the same reason as data; None for a form no row knows."""
    raw = text.strip()
    found = _parse(raw, {})
    if found is None and raw.endswith(COARSE_SUFFIX):
        found = _parse(raw[: -len(COARSE_SUFFIX)], {"coarse": True})
    return found


def _parse(raw: str, detail: dict[str, object]) -> BusyReason | None:
    for cls, pattern in _TEXT_PATTERNS:
        match = pattern.fullmatch(raw)
        if match is None:
            continue
        fields = match.groupdict()
        if "after" in fields:
            held = parse_text(fields["after"])
            if held is None:
                continue
            detail = {**detail, "after": held.model_dump(by_alias=True)}
        if "count" in fields:
            detail = {**detail, "count": int(fields["count"])}
        pid = fields.get("pid")
        return BusyReason.model_validate({"class": cls, "subject": fields.get("subject") or "",
                                          "pid": int(pid) if pid is not None else None, "detail": detail})
    return None


def reason_pairs(status: Status) -> list[tuple[BusyReason | None, str]]:
    """Each busy reason as (data, text): the agent's data where it sent it for a class this app knows, else its
    text read back (`parse_text`; None when no row knows that form either)."""
    data = status.structured_reasons
    texts = status.busy_reasons
    if len(data) != len(texts):  # an agent older than structured reasons (or one that sent a broken list)
        return [(parse_text(t), t) for t in texts]
    return [(d if d.reason_class in CLASSES else parse_text(t), t) for d, t in zip(data, texts, strict=True)]


def reason_words(status: Status, *, agent_now: float | None = None) -> list[str]:
    """Every busy reason in a developer's words, in order, each once (two pids of cc1plus read as one
    "compiling: cc1plus"); a reason no row knows is shown as the agent wrote it."""
    return _unique((row_words(d, agent_now) if d is not None else None) or t for d, t in reason_pairs(status))


def work_words(status: Status, *, agent_now: float | None = None) -> list[str]:
    """The reasons as a record read later says them: a hold as the work it holds ("compiling: cc1plus", never
    "compiling: cc1plus (just now)", which is only true as the status arrives)."""
    def words(d: BusyReason | None, text: str) -> str | None:
        if d is not None and d.reason_class == "hold":
            held = _held(d)
            return row_words(held, agent_now) if held is not None else None
        return (row_words(d, agent_now) if d is not None else None) or text

    return _unique(words(d, t) for d, t in reason_pairs(status))


def _unique(words: Iterable[str | None]) -> list[str]:
    out: list[str] = []
    for w in words:
        if w and w not in out:
            out.append(w)
    return out
