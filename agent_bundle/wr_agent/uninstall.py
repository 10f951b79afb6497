"""The installer's uninstall: stop the agent the way it was started, then remove what it installed.

`uninstall BUNDLE SOCKET LABEL_PREFIX [stop-only]` stops the agent so that nothing starts it again (its
systemd user unit disabled, its LaunchAgent booted out, its own supervisor killed before it, else the agent
by the pid in its lock), then removes the unit, the plist, the bundle, the socket's own files in the state
folder and staged uploads, and the two folders if that left them empty. `stop-only` stops it the same way
and keeps every file (its why-awake record, its settings) for the next start. It prints one JSON line:
{"stopped": [...], "removed": [paths], "problems": [...], "still_running": bool}; when the agent still
runs, nothing is removed. A state folder that another user could have swapped (state_folder) is not trusted
for anything: {"unsafe": why} and nothing is stopped or removed.

The app carries this file's text in its command, from its own bundle (remote/host_python.py): it works on a
host whose installed bundle is damaged, foreign or gone.
"""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from wr_agent.agent_process import lock_holder, why_not_our_agent
from wr_agent.state_folder import unsafe_state_folder

SYSTEMD_UNIT = ".config/systemd/user/wr-agent.service"
LAUNCH_AGENTS = "Library/LaunchAgents"
SUPERVISOR_COMM = "wr-agent-super"
STAGED_PREFIX = ".wr-agent.pyz.staged-"
TERM_SECONDS = 10.0
KILL_SECONDS = 5.0


def launchd_label(prefix, sock):
    """The LaunchAgent's label for `sock`, as the app's `launchd_label()` names it."""
    return "%s.%s" % (prefix, hashlib.sha256(sock.encode()).hexdigest()[:8])


def run(argv):
    """(ok, its last words) of a command; never raises."""
    try:
        p = subprocess.run(argv, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return False, str(e)
    return p.returncode == 0, (p.stderr or p.stdout).decode("utf-8", "replace").strip()[-300:]


def holder(sock):
    """The pid in `SOCKET.lock` while an agent holds the lock (-1 when it cannot be read); None when the
    lock is free or absent: nobody serves."""
    return lock_holder(sock)


def parent_and_comm(pid):
    """(parent pid, command name) of `pid`, as ps tells it; (None, "") when it cannot."""
    _, text = run(["ps", "-o", "ppid=,comm=", "-p", str(pid)])
    try:
        ppid, comm = text.split(None, 1)
        return int(ppid), comm.strip()
    except ValueError:
        return None, ""


def wait_free(sock, seconds):
    """Whether the lock is free within `seconds`."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if holder(sock) is None:
            return True
        time.sleep(0.1)
    return holder(sock) is None


def signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def stop_by_pid(sock, out, term_seconds=TERM_SECONDS, kill_seconds=KILL_SECONDS):
    """Stop the lock's holder: its own supervisor first (or it starts the agent again), SIGTERM, then
    SIGKILL to both when the lock is still held after `term_seconds`."""
    pid = holder(sock)
    if not pid or pid <= 0:
        return
    why = why_not_our_agent(pid, sock)
    if why is not None:  # a lock file anyone could write names a pid: signal nothing that is not our agent
        out["problems"].append("the agent's lock names a process the app will not stop: %s" % why)
        return
    ppid, _ = parent_and_comm(pid)
    victims = [pid]
    if ppid and parent_and_comm(ppid)[1].endswith(SUPERVISOR_COMM):
        victims.insert(0, ppid)
        out["stopped"].append("the agent's own supervisor (pid %d)" % ppid)
    signal_all(victims, signal.SIGTERM)
    if not wait_free(sock, term_seconds):
        signal_all(victims, signal.SIGKILL)
        wait_free(sock, kill_seconds)
    out["stopped"].append("the agent (pid %d)" % pid)


def stop(sock, unit, plist, label, out, term_seconds=TERM_SECONDS):
    """Stop it the way it was started, so nothing starts it again; says in `out` what was stopped."""
    if os.path.exists(unit) and shutil.which("systemctl"):
        ok, text = run(["systemctl", "--user", "disable", "--now", "wr-agent.service"])
        out["stopped" if ok else "problems"].append("systemd user unit" if ok else "systemctl: " + text)
    if os.path.exists(plist) and shutil.which("launchctl"):
        run(["launchctl", "bootout", "gui/%d/%s" % (os.getuid(), label)])
        out["stopped"].append("launchd LaunchAgent")
    stop_by_pid(sock, out, term_seconds)


def leftovers(bundle, sock, unit, plist):
    """Every file the agent may have left: its unit, plist and bundle, the socket's own files in the state
    folder (`agent.sock*`), and staged uploads in the install folder. Nothing else of those folders."""
    paths = [unit, plist, bundle]
    for folder, prefixes in ((os.path.dirname(sock), (os.path.basename(sock),)),
                             (os.path.dirname(bundle), (STAGED_PREFIX,))):
        try:
            paths += [os.path.join(folder, n) for n in sorted(os.listdir(folder)) if n.startswith(prefixes)]
        except OSError:
            pass
    return paths


def remove(paths, out):
    """Unlink each path (an absent one is no problem); says in `out` what was removed and what was not."""
    for path in paths:
        try:
            os.unlink(path)
            out["removed"].append(path)
        except FileNotFoundError:
            pass
        except OSError as e:
            out["problems"].append("%s: %s" % (path, e.strerror or e))


def uninstall(bundle, sock, label_prefix, stop_only=False, term_seconds=TERM_SECONDS):
    """Stop the agent of `bundle` and `sock` (both `~`-expanded) and, unless `stop_only` or it still runs,
    remove what it installed. Returns the answer (see the module's docstring)."""
    why = unsafe_state_folder(os.path.dirname(sock), missing_ok=True)
    if why is not None:
        return {"unsafe": why}
    out = {"stopped": [], "removed": [], "problems": [], "still_running": False}
    home = os.path.expanduser("~")
    unit = os.path.join(home, SYSTEMD_UNIT)
    plist = os.path.join(home, LAUNCH_AGENTS, launchd_label(label_prefix, sock) + ".plist")
    stop(sock, unit, plist, launchd_label(label_prefix, sock), out, term_seconds)
    out["still_running"] = holder(sock) is not None
    if out["still_running"] or stop_only:
        return out
    remove(leftovers(bundle, sock, unit, plist), out)
    if os.path.exists(os.path.dirname(unit)) and shutil.which("systemctl"):
        run(["systemctl", "--user", "daemon-reload"])
    for folder in (os.path.dirname(sock), os.path.dirname(bundle)):
        try:
            os.rmdir(folder)
        except OSError:
            pass
    return out


def main(argv):
    """`BUNDLE SOCKET LABEL_PREFIX [stop-only]`: print the answer."""
    bundle, sock = os.path.expanduser(argv[0]), os.path.expanduser(argv[1])
    out = uninstall(bundle, sock, argv[2], stop_only=argv[3:4] == ["stop-only"])
    sys.stdout.write(json.dumps(out) + "\n")
    return 0
