"""Busy reasons in the words a developer uses ("compiling: cc1plus"), from the agent's raw signals
("cpu: cc1plus (pid 4121)").

The agent names the signal that voted BUSY, which is right for a log but not for a glance: "D state",
"hold: after …" or "net: traffic" make a reader decode the classifier. The rows, the tray and the
badge tooltip show these words; the detail panel keeps the raw signal. Pure, so it is unit tested.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

COMPILERS = frozenset({"cc1", "cc1plus", "cc1obj", "clang", "clang++", "gcc", "g++", "rustc", "javac", "ld",
                       "ld.lld", "lld", "mold", "go", "tsc", "swiftc", "ghc", "nvcc", "as"})
BUILDERS = frozenset({"make", "ninja", "cargo", "bazel", "cmake", "gradle", "mvn", "meson", "scons", "msbuild"})
TESTERS = frozenset({"pytest", "ctest", "jest", "tox", "nox"})

_PROCESS = re.compile(r"^(?P<kind>[a-z]+): (?P<comm>.+?) \(pid \d+\)(?P<rest>.*?)(?: \(coarse\))?$")
_SSH = re.compile(r"^ssh session: (?:(?P<user>\S+) )?from (?P<peer>\S+)$")
_TCP_OUT = re.compile(r"^ to (?P<peer>\S+)$")
_TCP_IN = re.compile(r"^ from (?P<peer>\S+) on port (?P<port>\d+)$")


def _process_words(kind: str, comm: str, rest: str) -> str | None:
    if kind == "cpu":
        if comm in COMPILERS:
            return f"compiling: {comm}"
        if comm in BUILDERS:
            return f"building: {comm}"
        if comm in TESTERS:
            return f"testing: {comm}"
        return f"running: {comm}"
    if kind == "disk":
        return f"waiting on disk: {comm}"
    if kind == "sleep":
        return f"waiting in a job: {comm}"
    if kind == "tcp":
        # The agent names the connection: " to ADDR:PORT" (this end waits or receives), " from ADDR:PORT on
        # port N" (a request to this box's server); an older agent names only the process.
        out = _TCP_OUT.match(rest)
        if out:
            return f"waiting on the network: {comm} → {out.group('peer')}"
        served = _TCP_IN.match(rest)
        if served:
            return f"serving port {served.group('port')}: {comm} ← {served.group('peer')}"
        return "ssh connection out" if comm == "ssh" else f"network connection: {comm}"
    return None


def plain_reason(raw: str) -> str:
    """One raw busy reason in plain words (an unknown reason is returned as it came)."""
    raw = raw.strip()
    if raw.startswith("hold: after "):
        return f"{plain_reason(raw.removeprefix('hold: after '))} (just now)"
    ssh = _SSH.match(raw)
    if ssh:
        return f"ssh session from {ssh.group('peer')}"
    match = _PROCESS.match(raw)
    if match:
        words = _process_words(match.group("kind"), match.group("comm"), match.group("rest"))
        if words is not None:
            return words
    fixed = {
        "tty: output": "terminal output",
        "tty: keystroke": "someone typing",
        "net: traffic": "network traffic",
        "agent: operation in flight": "the agent's own task",
    }
    return fixed.get(raw, raw)


def plain_reasons(raw: Iterable[str]) -> list[str]:
    """Every reason in plain words, in order, each once (two pids of cc1plus read as one "compiling")."""
    out: list[str] = []
    for reason in raw:
        words = plain_reason(reason)
        if words not in out:
            out.append(words)
    return out
