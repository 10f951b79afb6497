"""Opening things on this computer's desktop: a terminal running a command, a file, a folder (revealed).

macOS: a terminal is opened with a `.command` file (a small shell script, mode 0700 in a private temporary
folder) handed to the terminal app with `open -a` — Terminal.app and the common alternatives (iTerm, and
others that register for `.command` files) all run those, so the user's pick needs only its name. Files open
with `open`, and `open -R` reveals one in Finder. Linux: `$TERMINAL`, else `x-terminal-emulator` (Debian's
alternatives), run as `TERM -e sh -c COMMAND`; files and folders with `xdg-open`.
Every launch is detached (its own session): the app never waits on what it opened. A thread of its own reaps
each launched program (none is left defunct) and, when one fails within `OPENER_WAIT_SECONDS` (xdg-open exits
4 when no program opened the file), says so in words to `on_failed`: a failed open is never silent.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

log = logging.getLogger(__name__)

MAC_DEFAULT_TERMINAL = "Terminal"
OPENER_WAIT_SECONDS = 10.0
"""How long a launched program may take to fail and still be told about (an opener exits at once; a terminal
runs on, and its later exit is nobody's error)."""
STDERR_LOGGED = 2000

Failed = Callable[[str], None]
"""Told, from the reaper's thread, what failed, in words."""

XDG_OPEN_EXITS = {
    1: "it was asked wrongly",
    2: "the file is not there",
    3: "a program it needs is missing",
    4: "no program on this computer opened it",
}
"""xdg-open's exit statuses, in words (xdg-utils documents them)."""


class DesktopOpenError(OSError):
    """What could not be opened, in words (the message names the program that was missing or failed)."""


def failure_words(program: str, code: int) -> str:
    """A launched program's failure, said plainly: "xdg-open could not open it: no program on this computer opened
    it (exit status 4)"."""
    name = Path(program).name
    why = XDG_OPEN_EXITS.get(code) if name == "xdg-open" else None
    if code < 0:
        return f"{name} was stopped (signal {-code}) before it opened anything."
    return f"{name} could not open it: {why or 'it failed'} (exit status {code})."


def _launch(argv: list[str], env: Mapping[str, str] | None = None, *, on_failed: Failed | None = None) -> None:
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True, env=None if env is None else dict(env))
    except OSError as exc:
        raise DesktopOpenError(f"Could not start {argv[0]}: {exc.strerror or exc}") from exc
    threading.Thread(target=_reap, args=(proc, on_failed), name=f"reap-{Path(argv[0]).name}", daemon=True).start()


def _reap(proc: subprocess.Popen[bytes], on_failed: Failed | None) -> None:
    """Wait for a launched program (so it is never left defunct) and tell `on_failed` if it failed early."""
    try:
        _, err = proc.communicate(timeout=OPENER_WAIT_SECONDS)
    except subprocess.TimeoutExpired:
        proc.communicate()  # it runs on (a terminal): reaped when it ends; its exit then is nobody's error
        return
    if proc.returncode == 0:
        return
    program = str(proc.args[0]) if isinstance(proc.args, list | tuple) else str(proc.args)
    words = failure_words(program, proc.returncode)
    log.warning("%s (%s)", words, (err or b"").decode(errors="replace")[:STDERR_LOGGED].strip() or "nothing on stderr")
    if on_failed is not None:
        on_failed(words)


def terminal_argv(command: str, *, terminal: str = "", environ: Mapping[str, str] | None = None,
                  platform: str = sys.platform, script_dir: Path | None = None) -> list[str]:
    """The command line that opens a terminal running `command` (a shell command line). `terminal`: the
    user's pick (an app name on macOS, a program elsewhere); empty for this computer's default."""
    env = os.environ if environ is None else environ
    if platform == "darwin":
        folder = script_dir or Path(tempfile.mkdtemp(prefix="workroom-term-"))
        script = folder / "workroom-ssh.command"
        script.write_text(f"#!/bin/sh\n{command}\n", encoding="utf-8")
        script.chmod(0o700)
        return ["open", "-a", terminal or MAC_DEFAULT_TERMINAL, str(script)]
    program = terminal or env.get("TERMINAL", "").strip() or "x-terminal-emulator"
    found = shutil.which(program, path=env.get("PATH"))
    if found is None:
        raise DesktopOpenError(f"No terminal program found ({program}). Set one in Settings › This computer, "
                               "or set $TERMINAL.")
    return [found, "-e", "sh", "-c", command]


def open_terminal(command: str, *, terminal: str = "", on_failed: Failed | None = None) -> None:
    _launch(terminal_argv(command, terminal=terminal), on_failed=on_failed)


def open_path(path: Path, *, reveal: bool = False, platform: str = sys.platform,
              on_failed: Failed | None = None) -> None:
    """Open a file (or a folder) with this computer's default app; `reveal`: show it in its folder instead.
    Raises DesktopOpenError when there is nothing to open it with; `on_failed` hears of an opener that failed."""
    if platform == "darwin":
        _launch(["open", "-R", str(path)] if reveal else ["open", str(path)], on_failed=on_failed)
        return
    target = path.parent if reveal and not path.is_dir() else path
    opener = shutil.which("xdg-open")
    if opener is None:
        raise DesktopOpenError(f"No program to open files with (xdg-open). The file is {path}.")
    _launch([opener, str(target)], on_failed=on_failed)
