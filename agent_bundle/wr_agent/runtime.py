"""Process-level plumbing for `serve`: the private socket directory, the one-instance lock, the listening
socket, and the hand-off (state file + execv keeping the PID)."""

import errno
import fcntl
import json
import os
import socket
import stat
import sys
import time

from wr_agent import launcher
from wr_agent.agent_log import log
from wr_agent.proc_name import set_comm  # noqa: F401 (runtime.set_comm, as before)
from wr_agent.state_folder import unsafe_state_folder

SUPERVISOR_FD_ENV = "WR_AGENT_SUPERVISOR_FD"  # a hand-off in a supervised child writes the new sha256 here
LOCK_FD_ENV, LISTEN_FD_ENV = "WR_AGENT_LOCK_FD", "WR_AGENT_LISTEN_FD"
STATE_MAX_AGE = 120.0
EXIT_LOCKED = 3


class StartupError(Exception):
    """A reason not to start, said plainly; `code` is the exit status."""

    DEFAULT_CODE = 2

    def __init__(self, message, code=DEFAULT_CODE):
        Exception.__init__(self, message)
        self.code = code


class NotARegularFile(OSError):
    """A FIFO, device, socket or directory where a small data file belongs."""


def read_regular_file(path, limit):
    """Up to `limit` + 1 bytes of `path`, refusing anything but a regular file without ever blocking on it
    (a FIFO opened for reading would wait for a writer for ever; a device could stream without end).
    Raises FileNotFoundError, NotARegularFile or another OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if not stat.S_ISREG(mode):
            raise NotARegularFile("%s is not a regular file" % path)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_data_file(path, limit):
    """The bytes of the small data file `path`, or None when there is none.

    What no good data file can be (not a regular file, larger than `limit`) raises ValueError, for the
    caller to treat like corrupt content; a file that cannot be read at all raises OSError."""
    try:
        raw = read_regular_file(path, limit)
    except FileNotFoundError:
        return None
    except NotARegularFile:
        raise ValueError("not a regular file") from None
    if len(raw) > limit:
        raise ValueError("larger than %d bytes" % limit)
    return raw


def write_atomically(path, data, sync=True):
    """Replace `path` with `data`, mode 0600: a reader sees the old file or the new one, never a mix.

    Written to `<path>.tmp.<pid>` (the name remove_leftovers knows), fsynced (unless `sync` is false: data that
    means nothing after a reboot), renamed over `path`. On any failure (a full disk) the temp file is removed and
    the error raised (OSError)."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def remove_leftovers(directory, prefixes):
    """Delete `<prefix>.tmp.<pid>` files a failed or interrupted save left behind (call under the lock, so
    no save of ours is in progress). Returns the names removed."""
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        for prefix in prefixes:
            rest = name[len(prefix) + 5:] if name.startswith(prefix + ".tmp.") else None
            if rest is not None and rest.isdigit():
                try:
                    if stat.S_ISREG(os.lstat(os.path.join(directory, name)).st_mode):
                        os.unlink(os.path.join(directory, name))
                        removed.append(name)
                except OSError:
                    pass
    return removed


def prepare_dir(sock_path):
    """Create the socket's directory 0700, or refuse one that is not private to us.

    Checked with lstat before anything is opened in it (log, lock, socket): a symlink planted in its place,
    a folder of another user's or one open to others could let someone else swap or read what we write; and
    every folder above it as the launcher checks the install folder's (state_folder): a folder above that
    another user can write lets them swap this one whole.
    """
    d = os.path.dirname(os.path.abspath(sock_path))
    if not os.path.lexists(d):
        parent = os.path.dirname(d)
        if not os.path.isdir(parent):
            os.makedirs(parent, 0o755)
        try:
            os.mkdir(d, 0o700)  # the umask can only take bits away: never wider than 0700
        except FileExistsError:
            pass  # made meanwhile: judged below like any existing folder
    why = unsafe_state_folder(d)
    if why:
        raise StartupError("refusing to start: %s; the agent's folder must be a real folder of this user's that "
                           "only it can enter, under folders nobody else can write" % why)
    return d


def inherited_fd(env):
    """A file descriptor a hand-off passed in environment variable `env` (taken out of the environment,
    made non-inheritable), or None."""
    value = os.environ.pop(env, None)
    if value is None:
        return None
    try:
        fd = int(value)
        os.fstat(fd)
    except (ValueError, OSError):
        return None
    os.set_inheritable(fd, False)
    return fd


def acquire_lock(sock_path):
    """flock on `<socket>.lock`: one agent per socket. Returns the held fd."""
    path = sock_path + ".lock"
    fd = inherited_fd(LOCK_FD_ENV)
    if fd is not None:
        try:
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                return fd
        except OSError:
            pass
        os.close(fd)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
        os.close(fd)
        raise StartupError("another wr-agent (pid %s) is already serving %s" % (holder, sock_path),
                           EXIT_LOCKED) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, ("%d\n" % os.getpid()).encode(), 0)
    return fd


def listen_socket(sock_path):
    fd = inherited_fd(LISTEN_FD_ENV)
    if fd is not None:
        return socket.socket(fileno=fd)
    try:
        st = os.lstat(sock_path)
    except FileNotFoundError:
        st = None
    if st is not None:
        if not stat.S_ISSOCK(st.st_mode):
            raise StartupError("refusing to start: %s is in the way (it is not a socket); move it away"
                               % sock_path)
        os.unlink(sock_path)  # we hold the lock, so a socket left there is stale
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(sock_path)
    except OSError as exc:
        sock.close()
        raise StartupError("cannot listen on %s: %s" % (sock_path, exc.strerror or exc)) from None
    finally:
        os.umask(old)
    os.chmod(sock_path, 0o600)
    sock.listen(64)
    return sock


def release_freed_memory():
    """Give the C heap's free pages back to the system (glibc's malloc_trim), once the start-up is over: the
    agent runs from a zipapp, so each of its modules is compiled at start, and the compiler's garbage stays
    resident in the heap's free lists (about 2 MB of an 18 MB agent, measured by bench/agent_bench.py). Where
    there is no glibc (musl, macOS) or no ctypes, nothing is done. Returns whether it ran."""
    try:
        import ctypes

        trim = ctypes.CDLL(None).malloc_trim
    except (ImportError, OSError, AttributeError):
        return False
    trim(0)
    return True


def boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return None


def write_state(path, state):
    """Write the hand-off state atomically; on any failure nothing is left behind (raises OSError)."""
    write_atomically(path, json.dumps(dict(state, boot_id=boot_id(), written=time.monotonic())).encode("utf-8"))


def remember(path, name, state, sync=True):
    """Keep `state` (JSON data) under `name` where a replacement agent finds it (a frozen or crashed agent is
    replaced by a new process, not handed off): atomically, with this boot's id (raises OSError). `sync` false:
    not fsynced (what only this boot's processes mean is lost with the boot anyway)."""
    write_atomically(path, json.dumps({name: state, "boot_id": boot_id()}).encode("utf-8"), sync)


def recall(path, name, limit=1 << 16):
    """The state a previous agent of this boot kept at `path` under `name` (a JSON object), or None (absent,
    another boot, a system that names no boot, corrupt). Not deleted: it is replaced as the state changes. Its
    times are this boot's monotonic clock, which every process shares, so they mean the same to the new agent."""
    try:
        raw = read_regular_file(path, limit)
        memory = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
        if not isinstance(memory, dict):
            raise ValueError("not an object")
        _check_numbers(memory)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError, UnicodeDecodeError) as exc:
        log.warning("ignoring the kept %s state %s: %s", name, path, exc)
        return None
    this_boot = boot_id()
    if this_boot is None or memory.get("boot_id") != this_boot or not isinstance(memory.get(name), dict):
        return None
    return memory[name]


def remember_ceiling(path, ceiling_state):
    remember(path, "ceiling", ceiling_state)


def recall_ceiling(path):
    """The ceiling state a previous agent of this boot kept (see recall): a prompt's deadline goes on."""
    return recall(path, "ceiling")


def take_state(path):
    """Read and delete a hand-off state file; None if absent, stale (other boot, too old) or corrupt."""
    try:
        raw = read_regular_file(path, 1 << 20)
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("cannot read hand-off state %s: %s", path, exc)
        return None
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    try:
        state = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
        if not isinstance(state, dict):
            raise ValueError("not an object")
        _check_numbers(state)
    except (ValueError, RecursionError, UnicodeDecodeError) as exc:
        log.warning("ignoring corrupt hand-off state %s: %s", path, exc)
        return None
    written = state.get("written")
    if state.get("boot_id") != boot_id() or not isinstance(written, (int, float)) or not (
            0 <= time.monotonic() - written <= STATE_MAX_AGE):
        log.warning("ignoring stale hand-off state %s", path)
        return None
    return state


# Numbers in a hand-off state are monotonic seconds and small counters; beyond this they are corrupt (and an
# integer of hundreds of digits would overflow the float arithmetic of every tick).
STATE_NUMBER_LIMIT = 1e12


def _no_constant(name):
    raise ValueError("%s is not a number the agent accepts" % name)


def _check_numbers(obj, depth=0):
    """Raise ValueError for a non-finite or absurdly large number anywhere in `obj` (a parsed JSON value)."""
    if depth > 20:
        raise ValueError("nested too deeply")
    if isinstance(obj, dict):
        for v in obj.values():
            _check_numbers(v, depth + 1)
    elif isinstance(obj, list):
        for v in obj:
            _check_numbers(v, depth + 1)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool) and not (
            -STATE_NUMBER_LIMIT <= obj <= STATE_NUMBER_LIMIT):
        raise ValueError("a number out of range (%.20s...)" % (obj,))


def exec_into(bundle_path, serve_args, lock_fd, listen_sock, sha256=None):
    """Replace this process (same PID) with `bundle_path`, passing the lock and the listening socket.
    Launched through the launcher, the new bundle is run through it again, expected to hash to `sha256`."""
    env = dict(os.environ)
    os.set_inheritable(lock_fd, True)
    os.set_inheritable(listen_sock.fileno(), True)
    env[LOCK_FD_ENV] = str(lock_fd)
    env[LISTEN_FD_ENV] = str(listen_sock.fileno())
    argv = [sys.executable, *launcher.AGENT_FLAGS, bundle_path, *serve_args]
    record = launcher.take_record()
    if record is not None and sha256:
        argv = launcher.command([sys.executable], sha256, bundle_path, record.get("folder", ""), serve_args)
    fd = os.environ.get(SUPERVISOR_FD_ENV)
    if sha256 and fd and fd.isdigit():
        try:  # tell the supervisor the hash its next restart must expect
            os.write(int(fd), (sha256.lower() + "\n").encode("ascii"))
        except OSError:
            pass
    if fd and fd.isdigit():
        try:
            os.set_inheritable(int(fd), True)  # the supervisor hears of the next hand-off too
        except OSError:
            pass
    log.info("handing off to %s", bundle_path)
    log.flush()
    try:
        os.execve(sys.executable, argv, env)
    finally:  # only reached when exec failed
        os.set_inheritable(lock_fd, False)
        os.set_inheritable(listen_sock.fileno(), False)
