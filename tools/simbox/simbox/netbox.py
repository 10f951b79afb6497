"""Making and removing one box: network namespace + veth ("tap"), user, cgroup, sshd in a PID namespace.

Every step is idempotent on removal (`destroy` ignores what is already gone), so `down` can clean up
after a daemon that died half-way through `up`.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from simbox import freezer, sshd_config
from simbox.state import BoxRecord, SimboxError

SUBNET_PREFIX = "10.232."
ALLOC_LOCK = Path("/run/lock/workroom-simbox.lock")


def run(*argv: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise SimboxError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def find_sshd() -> str:
    found = sshd_config.find_sshd()
    if not found:
        raise SimboxError("OpenSSH server not installed (apt-get install openssh-server)")
    return found


@contextmanager
def allocation_lock() -> Iterator[None]:
    """Serialise subnet choice between simbox daemons started at the same time."""
    ALLOC_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(ALLOC_LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def free_subnet() -> int:
    out = run("ip", "-4", "-o", "addr").stdout
    used = {int(w.split(".")[2]) for line in out.splitlines() for w in line.split()
            if w.startswith(SUBNET_PREFIX)}
    for n in range(1, 255):
        if n not in used:
            return n
    raise SimboxError(f"no free {SUBNET_PREFIX}x.0/30 subnet left (254 boxes up?)")


def plan(run_id: str, index: int, subnet: int, *, idle_window: float, mechanism: str,
         cgroup_root: Path | None, box_dir: Path) -> BoxRecord:
    tag = f"{run_id}{index}"
    cgroup = str(cgroup_root / f"{freezer.CGROUP_PREFIX}{tag}") if cgroup_root else None
    return BoxRecord(
        name=f"box{index}", netns=f"wrsb{tag}", host_if=f"wsh{tag}"[:15], box_if="eth0",
        host_addr=f"{SUBNET_PREFIX}{subnet}.1", box_addr=f"{SUBNET_PREFIX}{subnet}.2",
        user=f"wrsb{tag}", home=f"/home/wrsb{tag}", cgroup=cgroup, freezer=mechanism,
        idle_window_s=idle_window, dir=str(box_dir),
    )


def _sysctl_ipv6(key: str, disable: bool, netns: str | None = None) -> None:
    argv = ["sysctl", "-q", "-w", f"net.ipv6.conf.{key}.disable_ipv6={1 if disable else 0}"]
    if not Path("/proc/sys/net/ipv6").exists():
        return  # no IPv6 in this kernel at all: nothing to switch off
    run(*(["ip", "netns", "exec", netns] if netns else []), *argv)


def create_network(box: BoxRecord, *, ipv6: bool) -> None:
    """Namespace + veth; IPv6 off on both ends *before* the links come up (docs/simbox.md, background chatter)."""
    disable = not ipv6
    peer_tmp = f"wsb{box.netns[4:]}"[:15]
    run("ip", "netns", "add", box.netns)
    for key in ("all", "default"):
        _sysctl_ipv6(key, disable, box.netns)
    run("ip", "link", "add", box.host_if, "type", "veth", "peer", "name", peer_tmp)
    run("ip", "link", "set", peer_tmp, "netns", box.netns)
    run("ip", "-n", box.netns, "link", "set", peer_tmp, "name", box.box_if)
    _sysctl_ipv6(box.host_if, disable)
    _sysctl_ipv6(box.box_if, disable, box.netns)
    run("ip", "addr", "add", f"{box.host_addr}/30", "dev", box.host_if)
    run("ip", "-n", box.netns, "addr", "add", f"{box.box_addr}/30", "dev", box.box_if)
    run("ip", "link", "set", box.host_if, "up")
    run("ip", "-n", box.netns, "link", "set", "lo", "up")
    run("ip", "-n", box.netns, "link", "set", box.box_if, "up")
    run("ip", "-n", box.netns, "route", "add", "default", "via", box.host_addr)
    _static_neighbours(box)


def _static_neighbours(box: BoxRecord) -> None:
    """Both ends know each other's MAC for good: no ARP on the link (background chatter, docs/simbox.md).

    Otherwise the box's kernel probes its gateway a few seconds after its last datagram to it (and every
    half minute or so while it keeps sending), and a network meter counts those probes as activity: a box
    would sleep up to ~5 s late after its heartbeat stops, and a box whose heartbeat is dropped would be
    kept awake by the probes that heartbeat provokes.
    """
    host_mac = Path("/sys/class/net", box.host_if, "address").read_text().strip()
    box_mac = run("ip", "netns", "exec", box.netns, "cat", f"/sys/class/net/{box.box_if}/address").stdout.strip()
    run("ip", "-n", box.netns, "neigh", "replace", box.host_addr, "lladdr", host_mac, "dev", box.box_if,
        "nud", "permanent")
    run("ip", "neigh", "replace", box.box_addr, "lladdr", box_mac, "dev", box.host_if, "nud", "permanent")


def create_user(box: BoxRecord, client_pubkey: str) -> int:
    """An unprivileged user with an empty home (only ~/.ssh/authorized_keys) and /bin/sh."""
    try:
        pwd.getpwnam(box.user)
    except KeyError:
        # "*" = no password but not locked: with UsePAM no, sshd refuses a locked ("!") account.
        run("useradd", "--password", "*", "--no-create-home", "--home-dir", box.home,
            "--shell", "/bin/sh", "--user-group", box.user)
    entry = pwd.getpwnam(box.user)
    home = Path(box.home)
    if home.exists():
        shutil.rmtree(home)
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(mode=0o700, parents=True)
    home.chmod(0o755)
    auth = ssh_dir / "authorized_keys"
    auth.write_text(client_pubkey)
    auth.chmod(0o600)
    for p in (home, ssh_dir, auth):
        os.chown(p, entry.pw_uid, entry.pw_gid)
    return entry.pw_uid


def keygen(path: Path, comment: str) -> None:
    run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path))


def write_sshd_config(box: BoxRecord) -> Path:
    d = Path(box.dir)
    return sshd_config.write_sshd_config(d / "sshd_config", listen=box.box_addr, port=22, user=box.user,
                                         host_key=d / "ssh_host_ed25519_key")


def start_sshd(box: BoxRecord, log_path: Path) -> subprocess.Popen[bytes]:
    """sshd as PID 1 of a fresh PID namespace with a private /proc and its own ptys, inside the netns and the cgroup.

    Its own devpts instance, as any container or VM has: the box's agent sees the box's terminals only, not the
    ones of the machine the simulator runs on (a keystroke in a terminal here is not work in the box).
    """
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    keygen(Path(box.dir) / "ssh_host_ed25519_key", f"simbox-{box.name}-host")
    config = write_sshd_config(box)
    init = ("mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts"
            " && mount --bind /dev/pts/ptmx /dev/ptmx"
            f" && exec {shlex.quote(find_sshd())} -D -e -f {shlex.quote(str(config))}")
    argv = ["ip", "netns", "exec", box.netns, "unshare", "--pid", "--fork", "--mount-proc", "--propagation", "private",
            "sh", "-c", init]
    log = open(log_path, "ab")  # noqa: SIM115 - handed to the child, closed below
    try:
        proc = subprocess.Popen(freezer.join_argv(box.cgroup, argv), stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, start_new_session=True)
    finally:
        log.close()
    return proc


def wait_sshd(box: BoxRecord, proc: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    """Bounded wait until sshd listens on box_addr:22 (checked from inside the namespace)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SimboxError(f"sshd for {box.name} exited with {proc.returncode}; see {box.dir}/sshd.log")
        out = run("ip", "netns", "exec", box.netns, "ss", "-Htln", f"src {box.box_addr}:22", check=False)
        if out.stdout.strip():
            return
        time.sleep(0.1)
    raise SimboxError(f"sshd for {box.name} did not listen on {box.box_addr}:22 within {timeout} s")


def host_key_line(box: BoxRecord, port: int) -> str:
    key_type, key_b64 = (Path(box.dir) / "ssh_host_ed25519_key.pub").read_text().split()[:2]
    return f"[127.0.0.1]:{port} {key_type} {key_b64}"


def exec_argv(box: BoxRecord, argv: list[str], *, as_user: bool = True) -> list[str]:
    """argv that runs a command inside the box: its cgroup, netns, PID namespace and /proc, as its user."""
    if box.init_pid is None:
        raise SimboxError(f"{box.name} has no running init; is the simbox up?")
    inner = sshd_pid(box)
    cmd = ["nsenter", "--target", str(inner), "--net", "--pid", "--mount"]
    if as_user:
        cmd += [f"--setuid={box.uid}", f"--setgid={pwd.getpwnam(box.user).pw_gid}"]
    return freezer.join_argv(box.cgroup, [*cmd, "--", *argv])


def sshd_pid(box: BoxRecord) -> int:
    """The host PID of sshd (PID 1 inside the box): the child of the `unshare --fork` process.

    The cgroup-joining `sh` and `ip netns exec` both exec, so `init_pid` is the `unshare` process.
    """
    try:
        kids = Path(f"/proc/{box.init_pid}/task/{box.init_pid}/children").read_text().split()
    except FileNotFoundError as exc:
        raise SimboxError(f"{box.name}: init process {box.init_pid} is gone") from exc
    if not kids:
        raise SimboxError(f"{box.name}: init process {box.init_pid} has no child (sshd died?)")
    return int(kids[0])


def destroy(box: BoxRecord) -> list[str]:
    """Remove everything of one box that still exists; return what could not be removed."""
    problems = []
    left = freezer.kill_all(box.freezer, box.cgroup, box.netns)
    if box.init_pid:
        try:
            os.kill(box.init_pid, 9)
        except ProcessLookupError:
            pass
    if left:
        problems.append(f"{box.name}: processes still alive: {left}")
    try:
        freezer.remove_cgroup(box.cgroup)
    except OSError as exc:
        problems.append(f"{box.name}: cgroup {box.cgroup}: {exc}")
    run("ip", "link", "del", box.host_if, check=False)
    run("ip", "netns", "del", box.netns, check=False)
    try:
        entry = pwd.getpwnam(box.user)
    except KeyError:
        entry = None
    if entry is not None:
        _kill_uid(entry.pw_uid)
        out = run("userdel", "-r", "-f", box.user, check=False)
        if out.returncode not in (0, 12):  # 12: home could not be removed (already gone)
            problems.append(f"{box.name}: userdel {box.user}: {out.stderr.strip()}")
    if Path(box.home).exists():
        shutil.rmtree(box.home, ignore_errors=True)
    return problems


def _kill_uid(uid: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    if os.stat(f"/proc/{name}").st_uid == uid:
                        pids.append(int(name))
                except FileNotFoundError:
                    continue
        if not pids:
            return
        for pid in pids:
            for sig in (18, 9):  # SIGCONT then SIGKILL, by PID
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        time.sleep(0.05)
