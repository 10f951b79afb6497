"""Opening things on this computer's desktop: a terminal running a command, a file, a folder (revealed).

macOS: a terminal is opened with a `.command` file (a small shell script, mode 0700 in a private temporary
folder) handed to the terminal app with `open -a` — Terminal.app and the common alternatives (iTerm, and
others that register for `.command` files) all run those, so the user's pick needs only its name. Files open
with `open`, and `open -R` reveals one in Finder. Linux: `$TERMINAL`, else `x-terminal-emulator` (Debian's
alternatives), run as `TERM -e sh -c COMMAND`; files and folders with `xdg-open`.
Every launch is detached (its own session, no pipes of ours): the app never waits on what it opened.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

MAC_DEFAULT_TERMINAL = "Terminal"


class DesktopOpenError(OSError):
    """What could not be opened, in words (the message names the program that was missing or failed)."""


def _launch(argv: list[str], env: Mapping[str, str] | None = None) -> None:
    try:
        subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, env=None if env is None else dict(env))
    except OSError as exc:
        raise DesktopOpenError(f"Could not start {argv[0]}: {exc.strerror or exc}") from exc


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


def open_terminal(command: str, *, terminal: str = "") -> None:
    _launch(terminal_argv(command, terminal=terminal))


def open_path(path: Path, *, reveal: bool = False, platform: str = sys.platform) -> None:
    """Open a file (or a folder) with this computer's default app; `reveal`: show it in its folder instead."""
    if platform == "darwin":
        _launch(["open", "-R", str(path)] if reveal else ["open", str(path)])
        return
    target = path.parent if reveal and not path.is_dir() else path
    opener = shutil.which("xdg-open")
    if opener is None:
        raise DesktopOpenError(f"No program to open files with (xdg-open). The file is {path}.")
    _launch([opener, str(target)])
