"""Agent push by hash (docs/agent.md, hand-off): probe once, push only what differs, never run a partial upload.

Steps, each one command on the host (blocking; run on the host's worker thread):
1. probe: python3 present? the installed bundle's sha256 and version, whether an agent runs (its lock).
2. equal hash -> nothing to push. Installed newer -> keep it (an older app never downgrades).
3. upload to a staged file (mode 0600), verify its sha256 on the host, rename over the install path.
4. an agent running -> hand off to the new bundle (it re-executes, keeping settings and ceiling state);
   none running -> start it under its supervisor: a systemd user unit where the host has one (with
   linger), a launchd LaunchAgent where the host has launchd (macOS), otherwise the agent's own
   `--supervise` parent with its lock file for a single instance, detached by the agent itself
   (`--detach`, no `setsid(1)`: macOS and BusyBox hosts lack it; docs/macos.md).

Every step runs Python through `python` (default `python3` on the host's PATH); this computer passes its
own interpreter instead (providers.local), so a Mac's `/usr/bin/python3` placeholder is never needed.
"""

from __future__ import annotations

import hashlib
import json
import plistlib
import secrets
import shlex
import textwrap
import time
from dataclasses import dataclass, field

from workroom.agent_bundle import AgentBundle, version_tuple
from workroom.core.errors import UserError
from workroom.remote.host_shell import ExecResult, HostShell

DEFAULT_INSTALL_DIR = "~/.local/share/wr-agent"
DEFAULT_STATE_DIR = "~/.local/state/wr-agent"
BUNDLE_NAME = "wr-agent.pyz"
MIN_PYTHON = (3, 8)
START_TIMEOUT_SECONDS = 10.0
LAUNCHD_LABEL_PREFIX = "dev.workroom.companion.agent"
PYTHON3: tuple[str, ...] = ("python3",)

SUPERVISOR_SYSTEMD = "systemd user unit"
SUPERVISOR_LAUNCHD = "launchd LaunchAgent"
SUPERVISOR_OWN = "the agent's own supervisor"


@dataclass(frozen=True)
class AgentLayout:
    """Where the agent lives on a host. `~` is the host user's home."""

    install_dir: str = DEFAULT_INSTALL_DIR
    state_dir: str = DEFAULT_STATE_DIR

    @property
    def bundle_path(self) -> str:
        return f"{self.install_dir}/{BUNDLE_NAME}"

    @property
    def socket_path(self) -> str:
        return f"{self.state_dir}/agent.sock"


@dataclass(frozen=True)
class ServeOptions:
    """How the agent is started on a first install (kept across hand-offs by the agent itself)."""

    workroom: str
    candidates: str | None = None
    heartbeat: bool = True
    heartbeat_interval: float | None = None
    extra: tuple[str, ...] = ()

    def argv(self, socket_path: str) -> list[str]:
        # `--opt=VALUE`: a value starting with '-' (a host named "--log") stays a value, never an option.
        args = ["serve", f"--socket={socket_path}", f"--workroom={self.workroom}"]
        if self.candidates:
            args += ["--candidates", self.candidates]
        if not self.heartbeat:
            args.append("--no-heartbeat")
        if self.heartbeat_interval is not None:
            args += ["--heartbeat-interval", f"{self.heartbeat_interval:g}"]
        return args + list(self.extra)


@dataclass
class Probe:
    python: str | None
    home: str
    bundle_path: str
    socket_path: str
    sha256: str | None
    version: str | None
    running: bool
    systemd_user: bool
    running_build: str | None = None
    running_stalled: bool = False
    launchd: bool = False
    supervisor: str | None = None


@dataclass
class InstallReport:
    """What a push did. `pushed_bytes` is 0 when the installed agent was already this one."""

    pushed_bytes: int = 0
    action: str = "none"  # none | installed | handed_off | kept_newer
    installed_version: str | None = None
    socket_path: str = ""
    bundle_path: str = ""
    supervisor: str | None = None
    """Which supervisor keeps the agent alive (SUPERVISOR_*), or None when it cannot be told."""
    seconds: dict[str, float] = field(default_factory=dict)


class AgentInstallError(UserError):
    pass


class HostNotSuitable(AgentInstallError):
    """The host cannot run the agent until a person changes it (no or too old Python, an unsafe folder)."""

    retryable = False


def _expand(path: str, home: str) -> str:
    return home + path[1:] if path.startswith("~") else path


_NAME_SELF = textwrap.dedent(
    """\
    try:
        open("/proc/self/comm", "w").write("wr-agent-probe")  # the agent never counts its installer as work
    except OSError:
        pass
    """
)

_PROBE = textwrap.dedent(
    r"""
    import fcntl, hashlib, json, os, re, shutil, stat, sys  # zipfile, subprocess: only where needed (start-up)
    bundle, sock, expected = [os.path.expanduser(a) for a in sys.argv[1:3]] + [sys.argv[3]]
    out = {"python": "%d.%d.%d" % sys.version_info[:3], "home": os.path.expanduser("~"),
           "bundle": bundle, "socket": sock, "sha256": None, "version": None, "running": False,
           "systemd_user": False, "repaired": [], "launchd": False, "supervisor": None}
    # The install folder decides who could have written the bundle: it must be a real folder of this user's
    # that nobody else can write to. Ours but open to others is repaired, and what it holds is not trusted.
    folder, trusted = os.path.dirname(bundle), True
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            out["unsafe"] = "%s is not a folder (a symbolic link or a file)" % folder
        elif st.st_uid != os.getuid():
            out["unsafe"] = "%s belongs to uid %d, not to this user (uid %d)" % (folder, st.st_uid, os.getuid())
        elif st.st_mode & 0o022:
            os.chmod(folder, stat.S_IMODE(st.st_mode) & ~0o077)
            out["repaired"].append(folder)
            trusted = False
    if "unsafe" in out:
        print(json.dumps(out))
        sys.exit(0)
    try:
        fd = os.open(bundle, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            fst = os.fstat(f.fileno())
            if stat.S_ISREG(fst.st_mode) and fst.st_uid == os.getuid() and not fst.st_mode & 0o022:
                out["sha256"] = hashlib.sha256(f.read()).hexdigest()
    except OSError:
        pass
    if out["sha256"] and out["sha256"] != expected and not trusted:
        out["sha256"] = None  # may have been swapped while the folder was open: replace it, never run it
    if out["sha256"] and out["sha256"] != expected:
        # A bundle whose hash is not ours is never run to ask its version: it is read from the archive.
        try:
            import zipfile
            with zipfile.ZipFile(bundle) as z:
                m = re.search(r'__version__ = "([0-9.]+)"', z.read("wr_agent/__init__.py").decode("utf-8"))
            out["version"] = "wr-agent %s" % m.group(1) if m else "unreadable: no version in the bundle"
        except Exception as e:
            out["version"] = "unreadable: %s" % e
    try:
        fd = os.open(sock + ".lock", os.O_RDONLY | os.O_NONBLOCK)  # a FIFO there must not stall the probe
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError:
            out["running"] = True
        finally:
            os.close(fd)
    except OSError:
        pass
    if out["running"]:
        try:
            import socket
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(3)
            s.connect(sock)
            f = s.makefile("rwb")
            out["running_build"] = json.loads(f.readline()).get("build")
            f.write(b'{"id":"probe","method":"status"}\n')
            f.flush()
            for _ in range(100):  # skip events; the reply carries our id
                reply = json.loads(f.readline())
                if reply.get("id") == "probe":
                    out["running_stalled"] = (reply.get("result") or {}).get("stalled") is True
                    break
            s.close()
        except (OSError, ValueError, AttributeError):
            pass
    if os.environ.get("XDG_RUNTIME_DIR") and shutil.which("systemctl") and shutil.which("loginctl"):
        import subprocess
        p = subprocess.run(["systemctl", "--user", "is-system-running"], capture_output=True, timeout=10)
        # A user manager without linger stops (with the agent) soon after the last session ends: then the
        # agent's own supervisor is the one that outlives the app's SSH connection.
        linger = subprocess.run(["loginctl", "show-user", str(os.getuid()), "-p", "Linger"],
                                capture_output=True, timeout=10)
        out["systemd_user"] = (p.stdout.strip() in (b"running", b"degraded")
                               and linger.stdout.strip() == b"Linger=yes")
    # launchd: macOS. A LaunchAgent needs the user's GUI domain; the installer falls back when it is absent.
    out["launchd"] = bool(shutil.which("launchctl")) and not out["systemd_user"]
    try:
        fd = os.open(sock + ".supervisor", os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd) as f:
            if stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or device there names no supervisor
                out["supervisor"] = f.read(100).strip() or None
    except OSError:
        pass
    print(json.dumps(out))
    """
)

_RELAY_AFTER_PROBE = textwrap.dedent(
    r"""
    # Run after the probe above has printed its answer (the stream's first line): when nothing needs to
    # change -- the bundle's sha256, checked above, is the app's and an agent of that build runs, checking --
    # this process goes on as the relay from that bundle, and the protocol follows on the same stream (in
    # this process: a second interpreter would cost its start-up). Otherwise it ends here and the app
    # pushes, hands off or restarts first (`relay_follows` is the same rule, app side).
    sys.stdout.flush()
    if (sys.argv[4:] == ["relay"] and out["sha256"] is not None and out["sha256"] == expected and out["running"]
            and out.get("running_build") == expected and not out.get("running_stalled")):
        sys.path.insert(0, bundle)
        from wr_agent import relay
        sys.exit(relay.main(["relay", "--socket", sock]))
    """
)

PROBE_ANSWER_LIMIT = 64 * 1024
"""The most the host may print before the probe's answer (a login script's chatter included)."""


_VERIFY_AND_PLACE = textwrap.dedent(
    r"""
    import hashlib, os, sys
    staged, final, expected = [os.path.expanduser(a) for a in sys.argv[1:3]] + [sys.argv[3]]
    with open(staged, "rb") as f:
        got = hashlib.sha256(f.read()).hexdigest()
    if got != expected:
        os.unlink(staged)
        sys.exit("sha256 mismatch: uploaded %s, expected %s; the partial upload was deleted" % (got, expected))
    os.replace(staged, final)
    """
)

_WAIT_FOR_AGENT = textwrap.dedent(
    r"""
    import json, os, socket, sys, time
    sock, timeout, want = os.path.expanduser(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    build = want[len("build="):] if want.startswith("build=") else None

    def ready(f):
        hello = json.loads(f.readline())
        if build is not None:
            return hello.get("build") == build, "agent still runs build %s" % hello.get("build")
        f.write(b'{"id":"w","method":"status"}\n')
        f.flush()
        for _ in range(100):
            reply = json.loads(f.readline())
            if reply.get("id") == "w":
                return (reply.get("result") or {}).get("stalled") is False, "still stalled"
        return False, "no answer to status"

    deadline, last = time.monotonic() + timeout, "no answer"
    while time.monotonic() < deadline:
        try:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(2)
            s.connect(sock)
            try:
                ok, last = ready(s.makefile("rwb"))
            finally:
                s.close()
            if ok:
                sys.exit(0)
        except (OSError, ValueError, AttributeError) as e:
            last = str(e)
        time.sleep(0.05)
    sys.exit("the agent did not come up %s within %.0f s (%s)"
             % ("with the new build" if build else "checking", timeout, last))
    """
)
"""Run on the host: wait until the agent answers with build HASH (`build=HASH`) or is not stalled (`checking`)."""

_SYSTEMD_UNIT = textwrap.dedent(
    """\
    [Unit]
    Description=Workroom companion agent (wr-agent)

    [Service]
    ExecStart={exec_start}
    Restart=always
    RestartSec=1

    [Install]
    WantedBy=default.target
    """
)


_LAUNCHD_BOOTSTRAP = (
    'uid=$(id -u); launchctl bootout "gui/$uid/{label}" >/dev/null 2>&1; launchctl bootstrap "gui/$uid" {plist}'
)

# What Apple's /usr/bin/python3 placeholder prints when the Command Line Tools are missing: `command -v`
# finds it, but running it only opens the "install developer tools" dialog and exits non-zero.
_STUB_MARKERS = ("xcode-select", "developer tools", "xcrun: error", "CommandLineTools")


def _python_exec(python: tuple[str, ...]) -> str:
    """`exec PYTHON`, or says there is no such Python (exit 127, "wr: no python3") when the host has none."""
    exe = shlex.quote(python[-1])
    check = f"[ -x {exe} ]" if python[-1].startswith("/") else f"command -v {exe} >/dev/null 2>&1"
    run = " ".join(shlex.quote(a) for a in python)
    return f"{check} || {{ echo 'wr: no python3' >&2; exit 127; }}; exec {run}"


def _python_cmd(script: str, *args: str, python: tuple[str, ...] = PYTHON3) -> tuple[str, bytes]:
    """A command that runs `script` (sent on stdin) with `python`, or says there is no such Python."""
    quoted = " ".join(shlex.quote(a) for a in args)
    return f"{_python_exec(python)} - {quoted}", (_NAME_SELF + script).encode()


def _python_inline_cmd(script: str, *args: str, python: tuple[str, ...] = PYTHON3) -> str:
    """`script` on the command line (`-c`), leaving stdin to whatever the script becomes (the relay)."""
    quoted = " ".join(shlex.quote(a) for a in (_NAME_SELF + script, *args))
    return f"{_python_exec(python)} -c {quoted}"


def agent_command(python: tuple[str, ...], bundle_path: str, *args: str) -> str:
    """The command that runs the installed agent with the host's Python (`python`: the provider's
    `python_command`), for every step that runs it after the install: the hand-off and the relay."""
    return " ".join(shlex.quote(a) for a in (*python, bundle_path, *args))


def relay_argv(python: tuple[str, ...], bundle_path: str, socket_path: str) -> list[str]:
    """What an SSH channel runs to reach the agent's socket (`wr-agent relay`). Paths under `~` are given
    relative to the home the command starts in: a quoted `~` would not expand."""
    return [*python, _home_relative(bundle_path), "relay", "--socket", _home_relative(socket_path)]


def relay_command(python: tuple[str, ...], bundle_path: str, socket_path: str) -> str:
    """`relay_argv` as one shell command line."""
    return " ".join(shlex.quote(a) for a in relay_argv(python, bundle_path, socket_path))


def _home_relative(path: str) -> str:
    return path[2:] if path.startswith("~/") else path


def launchd_label(socket_path: str) -> str:
    """One LaunchAgent per agent socket: two app homes (a test, a second user profile) never clash."""
    return f"{LAUNCHD_LABEL_PREFIX}.{hashlib.sha256(socket_path.encode()).hexdigest()[:8]}"


def launchd_plist(label: str, argv: list[str], log: str, home: str) -> bytes:
    """The LaunchAgent: started at load and at login, restarted 1 s after it dies, logging to `log`."""
    return plistlib.dumps({
        "Label": label,
        "ProgramArguments": argv,
        "RunAtLoad": True,
        "KeepAlive": True,
        "ThrottleInterval": 1,
        "ProcessType": "Background",
        "WorkingDirectory": home,
        "StandardOutPath": log,
        "StandardErrorPath": log,
        "Umask": 0o077,
    })


class AgentInstaller:
    """Pushes `bundle` to a host through `shell` and makes sure an agent runs there."""

    def __init__(self, shell: HostShell, bundle: AgentBundle, layout: AgentLayout, serve: ServeOptions,
                 python: tuple[str, ...] = PYTHON3) -> None:
        self.shell = shell
        self.bundle = bundle
        self.layout = layout
        self.serve = serve
        self.python = python

    def probe(self) -> Probe:
        cmd, script = _python_cmd(_PROBE, self.layout.bundle_path, self.layout.socket_path, self.bundle.sha256,
                                  python=self.python)
        return self.read_probe(self.shell.run(cmd, input=script, timeout=30))

    def probe_then_relay_command(self) -> str:
        """One remote command for a reconnect: the probe (the same script as `probe`, the same Python), whose
        answer is the stream's first line, then -- only when `relay_follows`, the bundle's hash checked -- the
        relay of that bundle in the same process, speaking the protocol on the same stream."""
        return _python_inline_cmd(_PROBE + _RELAY_AFTER_PROBE, self.layout.bundle_path, self.layout.socket_path,
                                  self.bundle.sha256, "relay", python=self.python)

    def relay_follows(self, probe: Probe) -> bool:
        """Whether the probe-then-relay command went on as the relay: nothing to push, hand off or restart."""
        sha = self.bundle.sha256
        return probe.sha256 == sha and probe.running and probe.running_build == sha and not probe.running_stalled

    def read_probe(self, result: ExecResult) -> Probe:
        """The probe's answer (the last line of its output), or the host's refusal in words."""
        if result.exit_status == 127 and "no python3" in result.error_text():
            raise HostNotSuitable(
                "No Python on the host",
                "The host has no python3 on its PATH, and the workroom agent needs Python 3.8 or newer.",
                "Install python3 on the host (e.g. apt-get install python3), then connect again.",
            )
        if not result.ok and any(m.lower() in result.error_text().lower() for m in _STUB_MARKERS):
            raise HostNotSuitable(
                "Python on the host is only Apple's placeholder",
                "The host's python3 is the macOS stand-in that asks to install the Command Line Tools; "
                "it cannot run the workroom agent.",
                "On the host run xcode-select --install (or install Python 3 from python.org or Homebrew), "
                "then connect again.",
            )
        try:
            data = json.loads(result.text().strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise AgentInstallError(
                "Could not read the host",
                f"The probe of the host failed (exit {result.exit_status}): {result.error_text()[:300]}",
                "Check that the host's shell works for this user.",
            ) from None
        if data.get("unsafe"):
            raise HostNotSuitable(
                "The agent's folder on the host is not safe",
                f"{data['unsafe']}, so another user could replace the agent that the app would then run.",
                "Remove that folder on the host (or make it a folder of the login user's that only it can write "
                "to), then connect again.",
            )
        python = data.get("python")
        if version_tuple(python or "") < MIN_PYTHON:
            raise HostNotSuitable(
                "Python on the host is too old",
                f"The host's python3 is {python}; the workroom agent needs Python 3.8 or newer.",
                "Install a newer python3 on the host, then connect again.",
            )
        return Probe(
            python=python, home=data["home"], bundle_path=data["bundle"], socket_path=data["socket"],
            sha256=data.get("sha256"), version=data.get("version"), running=bool(data.get("running")),
            systemd_user=bool(data.get("systemd_user")), running_build=data.get("running_build"),
            running_stalled=data.get("running_stalled") is True,
            launchd=bool(data.get("launchd")), supervisor=data.get("supervisor"),
        )

    def ensure(self, probe: Probe | None = None) -> InstallReport:
        """Probe (unless the answer is given), push if needed, hand off or start. Blocking."""
        t0 = time.monotonic()
        probe = self.probe() if probe is None else probe
        report = InstallReport(socket_path=probe.socket_path, bundle_path=probe.bundle_path,
                               supervisor=probe.supervisor)
        report.seconds["probe"] = time.monotonic() - t0
        if probe.sha256 == self.bundle.sha256:
            report.installed_version = self.bundle.version
            if not probe.running:
                report.supervisor = self._start(probe)
                report.action = "started"
            elif probe.running_build not in (None, self.bundle.sha256):
                # The file is new but an earlier hand-off did not take: the old build still runs.
                self._handoff(probe)
                report.action = "handed_off"
            elif probe.running_stalled:
                self._restart_stalled(probe)
                report.action = "restarted"
            return report
        if probe.sha256 is not None and version_tuple(probe.version or "") > self.bundle.version_tuple:
            report.action = "kept_newer"
            report.installed_version = probe.version
            if not probe.running:
                report.supervisor = self._start(probe, probe.sha256)
            return report
        t1 = time.monotonic()
        report.pushed_bytes = self._upload_and_place(probe)
        report.seconds["upload"] = time.monotonic() - t1
        report.installed_version = self.bundle.version
        t2 = time.monotonic()
        if probe.running:
            self._handoff(probe)
            report.action = "handed_off"
        else:
            report.supervisor = self._start(probe)
            report.action = "installed"
        report.seconds["start"] = time.monotonic() - t2
        return report

    def _upload_and_place(self, probe: Probe) -> int:
        install_dir = _expand(self.layout.install_dir, probe.home)
        state_dir = _expand(self.layout.state_dir, probe.home)
        mk = self.shell.run(
            f"umask 077 && mkdir -p {shlex.quote(install_dir)} {shlex.quote(state_dir)}"
            f" && chmod 700 {shlex.quote(state_dir)}"
            f" && rm -f {shlex.quote(install_dir)}/.{BUNDLE_NAME}.staged-*",
            timeout=30,
        )
        if not mk.ok:
            raise AgentInstallError(
                "Could not prepare the host",
                f"Creating the agent's folders failed: {mk.error_text()[:300]}",
                "Check the free space and permissions in the host user's home.",
            )
        staged = f"{install_dir}/.{BUNDLE_NAME}.staged-{secrets.token_hex(6)}"
        sent = self.shell.put_file(self.bundle.data, staged, mode=0o600)
        cmd, script = _python_cmd(_VERIFY_AND_PLACE, staged, probe.bundle_path, self.bundle.sha256,
                                  python=self.python)
        placed = self.shell.run(cmd, input=script, timeout=60)
        if not placed.ok:
            raise AgentInstallError(
                "The agent upload was damaged",
                f"The host refused the uploaded agent: {placed.error_text()[:300]}",
                "Connect again to retry the upload.",
            )
        return sent

    def _wait_for_build(self, probe: Probe, expected: str | None = None) -> None:
        cmd, script = _python_cmd(
            _WAIT_FOR_AGENT, probe.socket_path, f"{START_TIMEOUT_SECONDS:g}", f"build={expected or self.bundle.sha256}",
            python=self.python,
        )
        waited = self.shell.run(cmd, input=script, timeout=START_TIMEOUT_SECONDS + 15)
        if not waited.ok:
            raise AgentInstallError(
                "The agent did not start",
                f"The agent did not answer after it was started: {waited.error_text()[:300]}",
                f"Look at {probe.socket_path}.log on the host.",
            )

    def _handoff(self, probe: Probe) -> None:
        cmd = agent_command(self.python, probe.bundle_path, "handoff", "--socket", probe.socket_path,
                            "--bundle", probe.bundle_path, "--sha256", self.bundle.sha256)
        done = self.shell.run(cmd, timeout=30)
        if not done.ok:
            raise AgentInstallError(
                "The agent update did not take",
                f"The running agent refused the new version: {done.error_text()[:300]}",
                "Connect again; if it repeats, stop the agent on the host and connect.",
            )
        # `handoff` itself returns only once the new build answers on the socket (or fails), so there is
        # nothing more to wait for here.

    def _restart_stalled(self, probe: Probe) -> None:
        """An agent that stopped checking: hand it off into the same bundle. The exec restarts it in place
        (same PID, lock and socket) and, unlike a kill, keeps the awake clock and a pending prompt."""
        self._handoff(probe)
        cmd, script = _python_cmd(_WAIT_FOR_AGENT, probe.socket_path, f"{START_TIMEOUT_SECONDS:g}", "checking",
                                  python=self.python)
        waited = self.shell.run(cmd, input=script, timeout=START_TIMEOUT_SECONDS + 15)
        if not waited.ok:
            raise AgentInstallError(
                "The agent did not restart",
                f"The agent had stopped checking the host and did not recover: {waited.error_text()[:300]}",
                f"Look at {probe.socket_path}.log on the host, or stop the agent there and connect again.",
            )

    def _start(self, probe: Probe, expected: str | None = None) -> str:
        """Start the agent under the best supervisor the host has; returns which one (SUPERVISOR_*)."""
        argv = [*self.python, probe.bundle_path, *self.serve.argv(probe.socket_path)]
        log = probe.socket_path + ".log"
        started = None
        supervisor = SUPERVISOR_OWN
        if probe.systemd_user:
            started = self._start_systemd(probe, argv)
            supervisor = SUPERVISOR_SYSTEMD
        elif probe.launchd:
            started = self._start_launchd(probe, argv, log)
            supervisor = SUPERVISOR_LAUNCHD
            if not started.ok:  # no GUI domain (e.g. a Mac reached over SSH with nobody logged in)
                started = None
        if started is None:
            supervisor = SUPERVISOR_OWN
            inner = " ".join(shlex.quote(a) for a in [*argv, "--supervise", "--log", log, "--detach"])
            started = self.shell.run(f"cd ~ && umask 077 && {inner} </dev/null >/dev/null", timeout=30)
        if not started.ok:
            raise AgentInstallError(
                "The agent did not start",
                f"Starting the agent failed: {started.error_text()[:300]}",
                f"Look at {log} on the host.",
            )
        self._wait_for_build(probe, expected)
        self.shell.put_file(supervisor.encode(), probe.socket_path + ".supervisor", mode=0o600)
        return supervisor

    def _start_systemd(self, probe: Probe, argv: list[str]) -> ExecResult:
        unit_dir = f"{probe.home}/.config/systemd/user"
        exec_start = " ".join(shlex.quote(a) for a in argv).replace("%", "%%").replace("$", "$$")
        unit = _SYSTEMD_UNIT.format(exec_start=exec_start)
        made = self.shell.run(f"mkdir -p {shlex.quote(unit_dir)}", timeout=30)
        if not made.ok:
            raise AgentInstallError("Could not prepare the host", f"Creating {unit_dir} failed: "
                                    f"{made.error_text()[:300]}", "Check the host user's home.")
        self.shell.put_file(unit.encode(), f"{unit_dir}/wr-agent.service", mode=0o644)
        return self.shell.run("systemctl --user daemon-reload && systemctl --user enable --now wr-agent.service",
                              timeout=30)

    def _start_launchd(self, probe: Probe, argv: list[str], log: str) -> ExecResult:
        label = launchd_label(probe.socket_path)
        plist_path = f"{probe.home}/Library/LaunchAgents/{label}.plist"
        made = self.shell.run(f"mkdir -p {shlex.quote(probe.home + '/Library/LaunchAgents')}", timeout=30)
        if not made.ok:
            return made
        self.shell.put_file(launchd_plist(label, argv, log, probe.home), plist_path, mode=0o644)
        return self.shell.run(_LAUNCHD_BOOTSTRAP.format(label=label, plist=shlex.quote(plist_path)), timeout=30)
