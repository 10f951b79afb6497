"""The user's login-shell environment for a GUI launch: PATH and SSH_AUTH_SOCK, read once at start-up.

An app started from Finder gets launchd's environment (PATH=/usr/bin:/bin:/usr/sbin:/sbin), not the one
the user's terminal has: a ProxyCommand such as `cloudflared`, `aws ssm ...` or anything from Homebrew is
not found, and an SSH agent set up in ~/.zshrc (1Password, Secretive) is not used. Like VS Code, run the
user's login shell once (`$SHELL -l -i -c env`, no terminal, bounded in time), take PATH and SSH_AUTH_SOCK
from it into this process's environment, which every ProxyCommand and local command inherits. When the
shell is slow or broken, keep what we have and add the usual Homebrew folders. See docs/macos.md.
"""

from __future__ import annotations

import logging
import os
import pwd
import secrets
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import MutableMapping
from dataclasses import dataclass

log = logging.getLogger(__name__)

TIME_LIMIT_SECONDS = 5.0
TAKEN = ("PATH", "SSH_AUTH_SOCK")
FALLBACK_DIRS = ("/opt/homebrew/bin", "/usr/local/bin")
DISABLE_ENV = "WORKROOM_LOGIN_ENV"  # "0" skips the login shell (tests, or a user whose shell misbehaves)


@dataclass(frozen=True)
class LoginEnv:
    """What was read, and from where; `error` says why the fallback was used instead."""

    values: dict[str, str]
    shell: str
    error: str | None = None


def login_shell(environ: MutableMapping[str, str]) -> str:
    shell = environ.get("SHELL")
    if shell and os.path.isabs(shell):
        return shell
    try:
        return pwd.getpwuid(os.getuid()).pw_shell or "/bin/sh"
    except KeyError:
        return "/bin/sh"


def read_login_env(shell: str, timeout: float = TIME_LIMIT_SECONDS) -> LoginEnv:
    """Run `shell -l -i -c env` without a terminal and read the variables in TAKEN between two markers."""
    mark = f"__WR_ENV_{secrets.token_hex(6)}__"
    command = f"echo {mark}; /usr/bin/env; echo {mark}"
    try:
        proc = subprocess.Popen([shell, "-l", "-i", "-c", command], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        return LoginEnv({}, shell, f"could not run {shell}: {exc}")
    out, complete = _read_until_second_mark(proc, mark.encode(), time.monotonic() + timeout)
    if not complete:
        # No end marker by the deadline: the shell itself hangs. Its own session goes (the shell and what
        # its start-up files began and left in it); a daemon that made its own session is not ours to kill.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        _reap_later(proc)
        return LoginEnv({}, shell, f"{shell} took longer than {timeout:g} s")
    # Both markers came: the environment is read. Whatever the shell left running (a `sleep 44 &` or an
    # ssh-agent its .profile started, which may hold the pipe open for ever) is the user's: never waited on,
    # never killed. The shell itself is reaped when it exits.
    _reap_later(proc)
    parts = out.decode("utf-8", "replace").split(mark)
    if len(parts) < 3:
        return LoginEnv({}, shell, f"{shell} printed no environment")
    values: dict[str, str] = {}
    for line in parts[1].splitlines():
        key, sep, value = line.partition("=")
        if sep and key in TAKEN and value:
            values[key] = value
    return LoginEnv(values, shell, None if "PATH" in values else f"{shell} gave no PATH")


MAX_OUTPUT_BYTES = 1 << 20


def _read_until_second_mark(proc: subprocess.Popen[bytes], mark: bytes, deadline: float) -> tuple[bytes, bool]:
    """The shell's output up to its second `mark` (True), or what came by `deadline` or EOF (False). The
    pipe is closed either way: a background job holding its other end cannot make us wait."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    buf = bytearray()
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while buf.count(mark) < 2 and len(buf) <= MAX_OUTPUT_BYTES:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return bytes(buf), False
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    return bytes(buf), buf.count(mark) >= 2
                buf += chunk
        return bytes(buf), buf.count(mark) >= 2
    finally:
        proc.stdout.close()


def _reap_later(proc: subprocess.Popen[bytes]) -> None:
    """Wait for the shell off this thread (no zombie left behind, and no wait here)."""
    threading.Thread(target=proc.wait, name="wr-login-shell-reaper", daemon=True).start()


def merged_path(first: str, then: str) -> str:
    """`first`'s folders, then those of `then` that it lacks: nothing the app already had is lost."""
    seen: list[str] = []
    for part in first.split(os.pathsep) + then.split(os.pathsep):
        if part and part not in seen:
            seen.append(part)
    return os.pathsep.join(seen)


def adopt_login_env(environ: MutableMapping[str, str] | None = None,
                    timeout: float = TIME_LIMIT_SECONDS) -> LoginEnv | None:
    """Blocking (up to `timeout`): put the login shell's PATH and SSH_AUTH_SOCK into `environ`."""
    env = os.environ if environ is None else environ
    if env.get(DISABLE_ENV) == "0":
        return None
    found = read_login_env(login_shell(env), timeout)
    current = env.get("PATH", "")
    if found.error is not None:
        extra = os.pathsep.join(d for d in FALLBACK_DIRS if os.path.isdir(d))
        env["PATH"] = merged_path(current, extra)
        log.warning("login shell environment not used (%s); PATH is now %s", found.error, env["PATH"])
        return found
    env["PATH"] = merged_path(found.values["PATH"], current)
    if "SSH_AUTH_SOCK" in found.values:
        env["SSH_AUTH_SOCK"] = found.values["SSH_AUTH_SOCK"]
    log.info("login shell %s: PATH %s; SSH agent socket %s", found.shell, env["PATH"],
             "from the login shell" if "SSH_AUTH_SOCK" in found.values else "unchanged")
    return found
