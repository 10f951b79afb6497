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

Every step that runs Python on the host is a module of the agent bundle (`wr_agent/install_probe.py`,
`install_place.py`, `install_wait.py`, `uninstall.py`, `relay.py`), its text carried in the command from the
app's own bundle (remote/host_python.py), run through `python` (default `python3` on the host's PATH); this
computer passes its own interpreter instead (providers.local), so a Mac's `/usr/bin/python3` placeholder is
never needed.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import shlex
import textwrap
import time
from dataclasses import dataclass, field, replace

from workroom.agent_bundle import AgentBundle, version_tuple
from workroom.core.host_text import plain
from workroom.core.install_report import InstallReport
from workroom.remote.agent_proof import NO_KEY_ID
from workroom.remote.answer_limit import PROBE_ANSWER
from workroom.remote.host_answers import (
    PROBE_FIELDS,
    WrongAnswer,
    last_json_object,
    read_fields,
    read_uninstall,
)
from workroom.remote.host_answers import AgentInstallError as AgentInstallError
from workroom.remote.host_answers import HostNotSuitable as HostNotSuitable
from workroom.remote.host_answers import UninstallReport as UninstallReport
from workroom.remote.host_python import PYTHON3 as PYTHON3
from workroom.remote.host_python import inline_command, stdin_command
from workroom.remote.host_shell import ExecResult, HostShell

DEFAULT_INSTALL_DIR = "~/.local/share/wr-agent"
DEFAULT_STATE_DIR = "~/.local/state/wr-agent"
BUNDLE_NAME = "wr-agent.pyz"
MIN_PYTHON = (3, 8)
START_TIMEOUT_SECONDS = 10.0
RESTART_BY_SUPERVISOR_SECONDS = 5.0
"""How long a killed frozen agent's supervisor has to start a fresh one (it restarts in 1-2 s) before the app
starts one itself."""
LAUNCHD_LABEL_PREFIX = "dev.workroom.companion.agent"

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
    running_frozen: bool = False
    """It holds its lock but cannot answer (stopped, or no hello): only replacing it helps."""
    launchd: bool = False
    supervisor: str | None = None
    key_differs: bool = False
    """The app's key for this agent is not the agent's (remote/agent_proof.py); then `key` is the agent's."""
    key: str | None = field(default=None, repr=False)
    """The agent's key, when `key_differs` (None: it has none, and none could be made)."""


def _is_pid(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 1


def _expand(path: str, home: str) -> str:
    return home + path[1:] if path.startswith("~") else path


# What each step runs on the host: modules of the agent bundle, carried in its command (remote/host_python.py),
# in import order, the one whose `main` runs last.
PROBE_MODULES = (
    "wr_agent.launcher", "wr_agent.state_folder", "wr_agent.agent_key", "wr_agent.agent_process",
    "wr_agent.install_probe")
"""The probe (`wr_agent/install_probe.py`); the folder rule is the launcher's, the state folder's its own."""

RELAY_MODULES = (
    "wr_agent", "wr_agent.proc_name", "wr_agent.launcher", "wr_agent.state_folder", "wr_agent.relay")
"""The relay: the modules its code imports (the socket's folder is checked before it connects), then its own."""

PROBE_THEN_RELAY_MODULES = (
    "wr_agent.launcher", "wr_agent.state_folder", "wr_agent.agent_key", "wr_agent.relay", "wr_agent.agent_process",
    "wr_agent.install_probe")
"""The probe, with the relay it becomes when nothing needs to change."""

PLACE_MODULES = ("wr_agent.install_place",)
"""What checks an upload's sha256 on the host and renames it into place."""

WAIT_MODULES = ("wr_agent.launcher", "wr_agent.state_folder", "wr_agent.install_wait")
"""What waits until the agent answers with build HASH (`build=HASH`) or is not stalled (`checking`)."""

UNINSTALL_MODULES = ("wr_agent.launcher", "wr_agent.state_folder", "wr_agent.agent_process", "wr_agent.uninstall")
"""What stops the agent the way it was started (systemd unit, LaunchAgent, own supervisor by its pid, else
the agent by its lock's pid, once verified as this user's agent), then removes its unit, plist, bundle and
state files."""

REPLACE_MODULES = ("wr_agent.launcher", "wr_agent.state_folder", "wr_agent.agent_process", "wr_agent.replace_frozen")
"""What kills an agent that holds its lock but does not answer, once it is verified as this user's agent."""

PROBE_ANSWER_LIMIT = 64 * 1024
"""The most the host may print before the probe's answer (a login script's chatter included)."""


_SYSTEMD_UNIT = textwrap.dedent(
    """\
    [Unit]
    Description=Workroom companion agent (wr-agent)

    [Service]
    ExecStart={exec_start}
    Restart=always
    RestartSec=1
    RestartPreventExitStatus=5

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


RELAY_START_FLAGS = ("-I", "-S")
"""How the relay's commands (the probe-then-relay one, `relay_command`) start Python: isolated (no PYTHON*
variables, no user site, not the login's folder on the path) and without `site` (no .pth files run): they need
nothing but the standard library, and `site` was a third of the interpreter's start-up here (21 -> 14 ms of
CPU for `python3 -c pass`; docs/protocol.md, transport)."""


def relay_argv(python: tuple[str, ...], bundle_path: str, socket_path: str) -> list[str]:
    """The relay in the agent's own terms (`wr-agent relay --socket PATH`, what a person would type on the host;
    the app runs the same relay through `relay_command`). Paths under `~` are given relative to the home the
    command starts in: a quoted `~` would not expand."""
    return [*python, _home_relative(bundle_path), "relay", "--socket", _home_relative(socket_path)]


def relay_command(python: tuple[str, ...], bundle: AgentBundle, socket_path: str) -> str:
    """The relay a session opens after a push, hand-off or start (or to a newer agent it keeps): the same
    `relay --socket PATH` as `relay_argv`, its code carried in the command from the app's own bundle as the
    probe-then-relay command carries it, so nothing of the installed file runs by its path alone."""
    return inline_command(bundle, RELAY_MODULES, "relay", "--socket", socket_path, python=python,
                          flags=RELAY_START_FLAGS)


def _home_relative(path: str) -> str:
    return path[2:] if path.startswith("~/") else path


LAUNCH_CALL = "\nlaunch()\n"
LAUNCH_WRAPPER = "import base64;exec(base64.b64decode('%s'))"


def launcher_argv(bundle: AgentBundle, python: tuple[str, ...], expected: str, bundle_path: str, folder: str,
                  args: list[str]) -> list[str]:
    """Run `bundle_path args...` on the host only after the launcher (wr_agent/launcher.py, from the app's own
    bundle) has checked its folders and that its sha256 is `expected`: the same argv the agent builds for its
    own restarts (launcher.command; a contract test holds the two together)."""
    text = bundle.launcher_source() + LAUNCH_CALL
    code = LAUNCH_WRAPPER % base64.b64encode(text.encode("utf-8")).decode("ascii")
    return [*python, "-c", code, expected, bundle_path, folder, *args]


def launchd_label(socket_path: str) -> str:
    """One LaunchAgent per agent socket: two app homes (a test, a second user profile) never clash."""
    return f"{LAUNCHD_LABEL_PREFIX}.{hashlib.sha256(socket_path.encode()).hexdigest()[:8]}"


def launchd_plist(label: str, argv: list[str], log: str, home: str) -> bytes:
    """The LaunchAgent: started at load and at login, restarted 1 s after it dies, logging to `log`."""
    import plistlib  # macOS hosts only: not on every command's start-up

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
        self.key_id = NO_KEY_ID
        """The id of the app's key for this agent (remote/agent_proof.py): the probe answers with the agent's
        key when it differs."""
        self.last_probe: Probe | None = None
        """The answer of the last probe `ensure` ran or was given."""

    def probe(self) -> Probe:
        cmd, script = stdin_command(self.bundle, PROBE_MODULES, self.layout.bundle_path, self.layout.socket_path,
                                    self.bundle.sha256, self.key_id, python=self.python)
        return self.read_probe(self.shell.run(cmd, input=script, timeout=30, limit=PROBE_ANSWER))

    def probe_then_relay_command(self) -> str:
        """One remote command for a reconnect: the probe (the same module as `probe`, the same Python), whose
        answer is the stream's first line, then -- only when `relay_follows`, the bundle's hash checked -- the
        relay in the same process, speaking the protocol on the same stream. The relay's code is carried in the
        command from this app's bundle (`PROBE_THEN_RELAY_MODULES`): it runs only when the installed bundle's
        bytes hash to this one, so it is that bundle's relay, and the installed file is not read again after
        its check."""
        return inline_command(self.bundle, PROBE_THEN_RELAY_MODULES, self.layout.bundle_path,
                              self.layout.socket_path, self.bundle.sha256, self.key_id, "relay", python=self.python,
                              flags=RELAY_START_FLAGS)

    def relay_follows(self, probe: Probe) -> bool:
        """Whether the probe-then-relay command went on as the relay: this bundle is installed and an agent runs
        (the host's rule). Whether that agent runs this build and is not stalled is read from the relay's own
        stream afterwards (`agent_is_current`)."""
        return probe.sha256 == self.bundle.sha256 and probe.running and not probe.running_frozen

    def agent_is_current(self, probe: Probe) -> bool:
        """Nothing to hand off or restart: the running agent is this build and not stalled."""
        return (probe.running_build in (None, self.bundle.sha256) and not probe.running_stalled
                and not probe.running_frozen)

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
        data = last_json_object(result)
        if data is None:
            said = result.said() or "it printed no answer of its own"
            raise AgentInstallError(
                "Could not read the host", f"The probe of the host failed (exit {result.exit_status}): {said}",
                "Check that the host's shell works for this user.",
            )
        try:
            python = read_fields(data, {"python": PROBE_FIELDS["python"]})["python"]
            if version_tuple(python) < MIN_PYTHON:  # said first: the rest of its answer may be missing then
                raise HostNotSuitable(
                    "Python on the host is too old",
                    f"The host's python3 is {python}; the workroom agent needs Python 3.8 or newer.",
                    "Install a newer python3 on the host, then connect again.",
                )
            fields = read_fields(data, PROBE_FIELDS)
        except WrongAnswer as wrong:
            raise AgentInstallError(
                "Could not read the host", f"The probe of the host answered in a form this app does not use: "
                f"{wrong.field} {wrong.why}.", "Check the login user's home and Python on the host.",
            ) from None
        if fields["unsafe"]:
            raise HostNotSuitable(
                "The agent's folder on the host is not safe",
                f"{fields['unsafe']}, so another user could replace the agent that the app would then run.",
                "Remove that folder on the host (or make it a folder of the login user's that only it can write "
                "to), then connect again.",
            )
        return Probe(
            python=fields["python"], home=fields["home"], bundle_path=fields["bundle"], socket_path=fields["socket"],
            sha256=fields["sha256"], version=fields["version"], running=fields["running"],
            systemd_user=fields["systemd_user"], running_build=fields["running_build"],
            running_stalled=fields["running_stalled"], running_frozen=fields["running_frozen"],
            launchd=fields["launchd"], supervisor=fields["supervisor"], key_differs="key" in data, key=fields["key"],
        )

    def uninstall(self, *, stop_only: bool = False) -> UninstallReport:
        """Stop the agent and remove everything it installed (blocking); `stop_only`: stop it the same way (so
        nothing starts it again) but keep its files — its why-awake record, its settings — for the next start.
        Raises AgentInstallError when it is still running afterwards (nothing is then removed) or the host
        could not be read."""
        cmd, script = stdin_command(self.bundle, UNINSTALL_MODULES, self.layout.bundle_path, self.layout.socket_path,
                                    LAUNCHD_LABEL_PREFIX, *(["stop-only"] if stop_only else []), python=self.python)
        result = self.shell.run(cmd, input=script, timeout=90)
        return read_uninstall(result, self.layout.socket_path)

    def ensure(self, probe: Probe | None = None) -> InstallReport:
        """Probe (unless the answer is given), push if needed, hand off or start. Blocking."""
        t0 = time.monotonic()
        probe = self.last_probe = self.probe() if probe is None else probe
        report = InstallReport(socket_path=probe.socket_path, bundle_path=probe.bundle_path,
                               supervisor=probe.supervisor)
        report.seconds["probe"] = time.monotonic() - t0
        if probe.sha256 == self.bundle.sha256:
            report.installed_version = self.bundle.version
            if not probe.running:
                report.supervisor = self._start(probe)
                report.action = "started"
            elif probe.running_frozen:
                report.supervisor = self._replace_frozen(probe)
                report.action = "replaced"
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
                f"Creating the agent's folders failed: {mk.said()}",
                "Check the free space and permissions in the host user's home.",
            )
        staged = f"{install_dir}/.{BUNDLE_NAME}.staged-{secrets.token_hex(6)}"
        sent = self.shell.put_file(self.bundle.data, staged, mode=0o600)
        cmd, script = stdin_command(self.bundle, PLACE_MODULES, staged, probe.bundle_path, self.bundle.sha256,
                                    python=self.python)
        placed = self.shell.run(cmd, input=script, timeout=60)
        if not placed.ok:
            raise AgentInstallError(
                "The agent upload was damaged",
                f"The host refused the uploaded agent: {placed.said()}",
                "Connect again to retry the upload.",
            )
        return sent

    def _wait_for_build(self, probe: Probe, expected: str | None = None) -> None:
        cmd, script = stdin_command(
            self.bundle, WAIT_MODULES, probe.socket_path, f"{START_TIMEOUT_SECONDS:g}",
            f"build={expected or self.bundle.sha256}", python=self.python,
        )
        waited = self.shell.run(cmd, input=script, timeout=START_TIMEOUT_SECONDS + 15)
        if not waited.ok:
            raise AgentInstallError(
                "The agent did not start",
                f"The agent did not answer after it was started: {waited.said()}",
                f"Look at {probe.socket_path}.log on the host.",
            )

    def _handoff(self, probe: Probe) -> None:
        cmd = " ".join(shlex.quote(a) for a in launcher_argv(
            self.bundle, self.python, self.bundle.sha256, probe.bundle_path, "",
            ["handoff", "--socket", probe.socket_path, "--bundle", probe.bundle_path, "--sha256", self.bundle.sha256]))
        done = self.shell.run(cmd, timeout=30)
        if not done.ok:
            raise AgentInstallError(
                "The agent update did not take",
                f"The running agent refused the new version: {done.said()}",
                "Connect again; if it repeats, stop the agent on the host and connect.",
            )
        # `handoff` itself returns only once the new build answers on the socket (or fails), so there is
        # nothing more to wait for here. A unit or plist names the hash it expects: the new one from now on.
        if probe.supervisor == SUPERVISOR_SYSTEMD:
            self._write_systemd_unit(probe, self._serve_argv(probe, self.bundle.sha256, self._systemd_dir(probe)))
            self.shell.run("systemctl --user daemon-reload", timeout=30)
        elif probe.supervisor == SUPERVISOR_LAUNCHD:
            label = launchd_label(probe.socket_path)
            self.shell.put_file(launchd_plist(label, self._serve_argv(probe, self.bundle.sha256,
                                                                      self._launchd_dir(probe)),
                                              probe.socket_path + ".log", probe.home),
                                f"{self._launchd_dir(probe)}/{label}.plist", mode=0o644)

    def _replace_frozen(self, probe: Probe) -> str | None:
        """An agent that holds its lock but cannot answer (stopped, deadlocked): kill it once it is verified as
        this user's agent serving this socket, let its supervisor start a fresh one (or start one), and wait
        until that answers. The fresh agent goes on from the ceiling the frozen one kept. Returns the
        supervisor (SUPERVISOR_*), as a start does."""
        cmd, script = stdin_command(self.bundle, REPLACE_MODULES, probe.socket_path, python=self.python)
        done = self.shell.run(cmd, input=script, timeout=30)
        answer = last_json_object(done)
        killed = answer.get("killed") if answer is not None else None
        refused = answer.get("refused") if answer is not None else None
        if answer is None or refused is not None or not (killed is None or _is_pid(killed)):
            why = plain(str(refused), 200) if isinstance(refused, str) else (
                f"its answer could not be read (exit {done.exit_status})")
            raise AgentInstallError(
                "The agent does not answer",
                f"The agent on the host holds its place but does not answer, and the app did not stop it: {why}.",
                f"Stop the process serving {probe.socket_path} on the host, then connect again.")
        cmd, script = stdin_command(self.bundle, WAIT_MODULES, probe.socket_path,
                                    f"{RESTART_BY_SUPERVISOR_SECONDS:g}", f"build={self.bundle.sha256}",
                                    python=self.python)
        if self.shell.run(cmd, input=script, timeout=RESTART_BY_SUPERVISOR_SECONDS + 15).ok:
            return probe.supervisor  # its supervisor started a fresh one
        return self._start(replace(probe, running=False, running_frozen=False))

    def _restart_stalled(self, probe: Probe) -> None:
        """An agent that stopped checking: hand it off into the same bundle. The exec restarts it in place
        (same PID, lock and socket) and, unlike a kill, keeps the awake clock and a pending prompt."""
        self._handoff(probe)
        cmd, script = stdin_command(self.bundle, WAIT_MODULES, probe.socket_path, f"{START_TIMEOUT_SECONDS:g}",
                                    "checking", python=self.python)
        waited = self.shell.run(cmd, input=script, timeout=START_TIMEOUT_SECONDS + 15)
        if not waited.ok:
            raise AgentInstallError(
                "The agent did not restart",
                f"The agent had stopped checking the host and did not recover: {waited.said()}",
                f"Look at {probe.socket_path}.log on the host, or stop the agent there and connect again.",
            )

    def _serve_argv(self, probe: Probe, expected: str, folder: str, extra: tuple[str, ...] = ()) -> list[str]:
        return launcher_argv(self.bundle, self.python, expected, probe.bundle_path, folder,
                             [*self.serve.argv(probe.socket_path), *extra])

    @staticmethod
    def _systemd_dir(probe: Probe) -> str:
        return f"{probe.home}/.config/systemd/user"

    @staticmethod
    def _launchd_dir(probe: Probe) -> str:
        return f"{probe.home}/Library/LaunchAgents"

    def _start(self, probe: Probe, expected: str | None = None) -> str:
        """Start the agent under the best supervisor the host has; returns which one (SUPERVISOR_*). Every
        start goes through the launcher, expecting `expected` (default: this app's bundle)."""
        want = expected or self.bundle.sha256
        log = probe.socket_path + ".log"
        started = None
        supervisor = SUPERVISOR_OWN
        if probe.systemd_user:
            started = self._start_systemd(probe, self._serve_argv(probe, want, self._systemd_dir(probe)))
            supervisor = SUPERVISOR_SYSTEMD
        elif probe.launchd:
            started = self._start_launchd(probe, self._serve_argv(probe, want, self._launchd_dir(probe)), log)
            supervisor = SUPERVISOR_LAUNCHD
            if not started.ok:  # no GUI domain (e.g. a Mac reached over SSH with nobody logged in)
                started = None
        if started is None:
            supervisor = SUPERVISOR_OWN
            argv = self._serve_argv(probe, want, "", ("--supervise", "--log", log, "--detach"))
            inner = " ".join(shlex.quote(a) for a in argv)
            started = self.shell.run(f"cd ~ && umask 077 && {inner} </dev/null >/dev/null", timeout=30)
        if not started.ok:
            raise AgentInstallError(
                "The agent did not start",
                f"Starting the agent failed: {started.said()}",
                f"Look at {log} on the host.",
            )
        self._wait_for_build(probe, expected)
        self.shell.put_file(supervisor.encode(), probe.socket_path + ".supervisor", mode=0o600)
        return supervisor

    def _write_systemd_unit(self, probe: Probe, argv: list[str]) -> None:
        unit_dir = self._systemd_dir(probe)
        exec_start = " ".join(shlex.quote(a) for a in argv).replace("%", "%%").replace("$", "$$")
        made = self.shell.run(f"umask 077 && mkdir -p {shlex.quote(unit_dir)}", timeout=30)
        if not made.ok:
            raise AgentInstallError("Could not prepare the host", f"Creating {unit_dir} failed: "
                                    f"{made.said()}", "Check the host user's home.")
        self.shell.put_file(_SYSTEMD_UNIT.format(exec_start=exec_start).encode(), f"{unit_dir}/wr-agent.service",
                            mode=0o644)

    def _start_systemd(self, probe: Probe, argv: list[str]) -> ExecResult:
        self._write_systemd_unit(probe, argv)
        return self.shell.run("systemctl --user daemon-reload && systemctl --user reset-failed wr-agent.service "
                              ">/dev/null 2>&1; systemctl --user enable --now wr-agent.service", timeout=30)

    def _start_launchd(self, probe: Probe, argv: list[str], log: str) -> ExecResult:
        label = launchd_label(probe.socket_path)
        folder = self._launchd_dir(probe)
        plist_path = f"{folder}/{label}.plist"
        made = self.shell.run(f"umask 077 && mkdir -p {shlex.quote(folder)}", timeout=30)
        if not made.ok:
            return made
        self.shell.put_file(launchd_plist(label, argv, log, probe.home), plist_path, mode=0o644)
        return self.shell.run(_LAUNCHD_BOOTSTRAP.format(label=label, plist=shlex.quote(plist_path)), timeout=30)
