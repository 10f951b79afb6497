"""A command without the app, started warm: the command's side (docs/cli.md, "Warm start").

Without the app a command runs an engine of its own, and its start was mostly imports (asyncio, paramiko,
pydantic and the core's models: ~300 ms here, longer than OpenSSH's whole `ssh host true`). So a command that ran
itself leaves a starter behind (`cli/warm_server.py`): a process of this user's that has imported all that and
holds nothing else: no engine, no connection, no host, no secret, no open file of the home's. The next command
hands it its arguments, folder, environment and umask over a private socket beside the app's; the starter forks,
and the fork runs the very command as a command without the app runs it (its own engine, the files read as they
are now), saying what it prints through the frames the app's link uses (`workroom.app_link`). The starter ends
after `IDLE_SECONDS` unused, when its code on disk or a command's code is not the code it imported, or at
`workroom app quit`; `WORKROOM_WARM=0` turns it off.

This side is on the path of every command without the app: the C socket module and os, nothing more.
"""

from __future__ import annotations

import _socket
import os
import sys
from typing import NamedTuple

from workroom import __version__, app_link

WARM_VERSION = 1
"""The version of this request (the answer is the app link's frames, `app_link.LINK_VERSION`)."""
HEADER = b"workroom-warm"
"""A command: `workroom-warm WARM VERSION LENGTH`, then the body (`request`)."""
QUIT_HEADER = b"workroom-warm-quit"
"""`workroom app quit`: the starter ends (its fork answers with the starter's pid, in a hello frame)."""
SOCKET_NAME = "warm.sock"
LOCK_NAME = "warm.lock"
"""Flocked by the live starter, which writes its pid into it (one starter per home)."""
MAX_SOCKET_PATH = 103
"""The longest socket path every platform binds (macOS's `sun_path` holds 104 bytes with its NUL)."""
ENV_SWITCH = "WORKROOM_WARM"
"""`0` (or `off`, `no`, `false`): commands neither use a starter nor leave one."""
IDLE_ENV = "WORKROOM_WARM_IDLE_SECONDS"
IDLE_SECONDS = 600.0
"""How long a starter waits unused before it ends (`WORKROOM_WARM_IDLE_SECONDS` moves it, 1 s to a day)."""
HELLO_SECONDS = 2.0
"""A starter that took neither the connection nor the request up or down within this is passed over: the command
runs itself (the fork, never told to go, runs nothing)."""
GO = b"g"
"""command -> fork, after the fork's hello: run it. Until then the fork has run nothing, so a command that gave up
waiting can run itself without the command running twice."""
MAX_REQUEST_BYTES = 1024 * 1024
"""Arguments and environment together (an environment is a few KiB; the app link's bounds hold for arguments)."""
STARTER_PROGRAM = ("import sys; p = sys.argv.pop(); sys.path.insert(0, p) if p not in sys.path else None; "
                   "from workroom.cli.warm_server import main; sys.exit(main(p))")
"""How a command starts the starter (`python -P -c`: no folder of the person's on its path): from `/`, with the
folder of the package the command runs first on its path, so the starter imports that very copy (and ends at once
if it did not)."""
STARTER_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "TMPDIR", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH",
               "DYLD_FALLBACK_LIBRARY_PATH")
STARTER_ENV_PREFIXES = ("PYTHON", "WORKROOM_", "XDG_", "LC_")
"""What of a command's environment the starter keeps (a fork takes its own command's whole environment): where
the home and its folders are, how Python finds its modules; no token or agent socket of anyone's."""
ENDED_WORDS = ("The command's process ended before it answered. `WORKROOM_WARM=0 workroom ...` runs it without "
               "the warm starter.")


def enabled(environ: os._Environ[str] | dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return env.get(ENV_SWITCH, "").strip().lower() not in ("0", "off", "no", "false")


def idle_seconds(environ: os._Environ[str] | dict[str, str] | None = None) -> float:
    """`WORKROOM_WARM_IDLE_SECONDS` (1 s to a day), else `IDLE_SECONDS`."""
    env = os.environ if environ is None else environ
    try:
        given = float(env.get(IDLE_ENV, ""))
    except ValueError:
        return IDLE_SECONDS
    return min(max(given, 1.0), 86400.0) if given == given else IDLE_SECONDS


def idle_words() -> str:
    seconds = idle_seconds()
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:g} s"


def folder(environ: os._Environ[str] | dict[str, str] | None = None) -> str:
    """The home's runtime folder, where the app listens too (`app_link.guessed_folder`)."""
    return app_link.guessed_folder(os.environ if environ is None else environ)


def socket_path(environ: os._Environ[str] | dict[str, str] | None = None) -> str | None:
    """The home's warm socket; None when no starter can listen there (the folder is not this user's private one,
    or the path is longer than a socket address holds)."""
    where = folder(environ)
    path = os.path.join(where, SOCKET_NAME)
    if len(os.fsencode(path)) > MAX_SOCKET_PATH or not app_link._private(where):
        return None
    return path


def code_identity() -> str:
    """The interpreter (wherever a link to it was typed), its environment, the app's package and the mount
    namespace this process runs in: a starter serves only commands of its own code, on its own view of the files
    (a container sharing the runtime folder is another)."""
    try:
        mounts = os.readlink("/proc/self/ns/mnt")
    except OSError:
        mounts = ""
    return (f"{os.path.realpath(sys.executable)}|{sys.prefix}|{package_parent()}|{__version__}|{mounts}")


def package_parent() -> str:
    """The folder this process's `workroom` package was imported from."""
    import workroom

    return os.path.dirname(os.path.dirname(os.path.abspath(workroom.__file__)))


def request(argv: list[str], cwd: str, stdin_tty: bool, environ: dict[str, str] | os._Environ[str]) -> bytes:
    """`workroom-warm WARM VERSION LENGTH`, then LENGTH bytes of NUL-separated fields: the folder the command was
    typed in, "1" when its stdin is a terminal, its umask in octal, its code (`code_identity`), the number of
    environment entries, the entries (`NAME=value`), then its arguments. A LinkError when it is larger than a
    starter takes."""
    env = [f"{k}={v}" for k, v in environ.items() if "\0" not in k + v and "=" not in k]
    fields = [cwd, "1" if stdin_tty else "0", f"{_umask():o}", code_identity(), str(len(env)), *env, *argv]
    body = b"\0".join(f.encode("utf-8", "surrogateescape") for f in fields)
    if (len(body) > MAX_REQUEST_BYTES or len(argv) > app_link.MAX_ARGS
            or any(len(a.encode("utf-8", "surrogateescape")) > app_link.MAX_ARG_BYTES for a in argv)):
        raise app_link.LinkError("too long for a starter")
    return b"%s %d %s %d\n" % (HEADER, WARM_VERSION, __version__.encode(), len(body)) + body


class Request(NamedTuple):
    cwd: str
    stdin_tty: bool
    umask: int
    code: str
    environ: dict[str, str]
    argv: list[str]


def read_body(body: bytes) -> Request | None:
    """The request's fields (`request`); None when the body cannot be one."""
    fields = [f.decode("utf-8", "surrogateescape") for f in body.split(b"\0")]
    try:
        cwd, tty, umask, code, count = fields[0], fields[1], int(fields[2], 8), fields[3], int(fields[4])
    except (IndexError, ValueError):
        return None
    if not os.path.isabs(cwd) or tty not in ("0", "1") or not 0 <= umask <= 0o777 or not 0 <= count <= len(fields) - 5:
        return None
    entries, argv = fields[5:5 + count], fields[5 + count:]
    if any("=" not in e or e.startswith("=") for e in entries) or len(argv) > app_link.MAX_ARGS:
        return None
    return Request(cwd, tty == "1", umask, code, dict(e.split("=", 1) for e in entries), argv)


def _umask() -> int:
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def _dial(environ: os._Environ[str] | dict[str, str] | None = None) -> _socket.socket | None:
    """A connection to the home's starter, its peer checked to be this user, every step bounded by
    `HELLO_SECONDS` (a stopped starter's full backlog must not hold the command); None: none to be had."""
    path = socket_path(environ)
    if path is None:
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(HELLO_SECONDS)
    try:
        sock.connect(path)
        uid = app_link.peer_uid(sock)
    except OSError:
        sock.close()
        return None
    if uid is not None and uid != os.getuid():
        sock.close()
        return None
    return sock


def starter_listening(environ: os._Environ[str] | dict[str, str] | None = None) -> bool:
    """Whether the home's starter takes commands now (it binds its socket before its imports, listens after
    them); the look is an empty request, which its fork refuses."""
    sock = _dial(environ)
    if sock is None:
        return False
    sock.close()
    return True


def run_warm(argv: list[str]) -> int | None:
    """Run `argv` in this home's starter and print what it says; the exit code, or None when there is no starter
    to take it (then the command runs itself, as it always could). Nothing the person sees differs between the
    two, but the time."""
    if not enabled():
        return None
    sock = _dial()
    if sock is None:
        return None
    try:
        try:
            sock.sendall(request(argv, os.getcwd(), app_link._isatty(sys.stdin), os.environ))
            frames = app_link._Frames(sock)
            hello = frames.next()
            if hello is None or hello[0] != app_link.HELLO:  # refused: other code, or a folder it cannot enter
                return None
            sock.sendall(app_link.frame(GO))  # from here the command is the fork's to run
            sock.settimeout(None)
        except (OSError, app_link.LinkError):  # a starter that is ending, or stuck: the command runs itself
            return None
        try:
            return app_link.converse_frames(sock, frames, argv, ended=ENDED_WORDS)
        except ConnectionResetError:
            raise app_link.LinkError(ENDED_WORDS) from None
    except app_link.LinkError as error:
        sys.stderr.write(f"workroom: {error}\n")
        return app_link.EXIT_ERROR
    except KeyboardInterrupt:
        return app_link.EXIT_INTERRUPTED
    except BrokenPipeError:  # `| head` stopped reading: nothing more to say there
        return app_link.EXIT_BROKEN_PIPE
    finally:
        sock.close()


def leave_starter() -> None:
    """After a command that ran itself (and paid the imports): start this home's starter for the next one, unless
    one runs, starters are off, or none could listen here. It imports in the background, in a session of its own,
    from `/`; this command does not wait for it."""
    if not enabled() or socket_path() is None or starter_pid() is not None:
        return
    import subprocess

    try:
        subprocess.Popen([sys.executable, "-P", "-c", STARTER_PROGRAM, package_parent()], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                         close_fds=True, cwd="/", env=starter_env(os.environ))
    except OSError:  # no starter: the next command runs itself, as this one did
        pass


def starter_env(environ: os._Environ[str] | dict[str, str]) -> dict[str, str]:
    """The starter's environment (`STARTER_ENV`), with `WORKROOM_HOME` and PYTHONPATH made absolute: it runs from
    `/`, and must find the home and the modules the command found."""
    env = {k: v for k, v in environ.items() if k in STARTER_ENV or k.startswith(STARTER_ENV_PREFIXES)}
    home = env.get("WORKROOM_HOME", "").strip()
    if home:
        env["WORKROOM_HOME"] = os.path.abspath(os.path.expanduser(home))
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    return env


def starter_pid(environ: os._Environ[str] | dict[str, str] | None = None) -> int | None:
    """This home's live starter, from its lock file while that file is flocked (a starter killed outright leaves
    its pid behind), for `workroom app status` and to leave no second one."""
    where = folder(environ)
    if not app_link._private(where):
        return None
    pid = app_link.holder_pid(where, LOCK_NAME)
    if pid is None:
        return None
    import fcntl

    try:
        fd = os.open(os.path.join(where, LOCK_NAME), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return pid  # held: the starter lives
    finally:
        os.close(fd)
    return None


def stop_starter(environ: os._Environ[str] | dict[str, str] | None = None) -> int | None:
    """End this home's starter (`workroom app quit`): asked over its socket, so the signal goes from its own fork
    to its parent, never to a pid read from a file; the pid it had, or None when none answered. A command it is
    running goes on to its end."""
    sock = _dial(environ)
    if sock is None:
        return None
    try:
        sock.sendall(b"%s %d %s 0\n" % (QUIT_HEADER, WARM_VERSION, __version__.encode()))
        answer = app_link._Frames(sock).next()
    except (OSError, app_link.LinkError):
        return None
    finally:
        sock.close()
    if answer is None or answer[0] != app_link.HELLO or not answer[1].isdigit():
        return None
    return int(answer[1])
