"""Who is not a candidate: system daemons (by comm), and trees whose work is not the user's."""

# Kernel comm names are truncated to 15 bytes; entries here are as /proc/PID/stat shows them.
DAEMONS = frozenset((
    "sshd", "sshd-session", "sshd-auth", "dbus-daemon", "dbus-broker", "dbus-broker-lau", "rsyslogd",
    "syslog-ng", "syslogd", "klogd", "journald", "udevd", "polkitd", "accounts-daemon", "irqbalance",
    "chronyd", "ntpd", "ntpsec", "openntpd", "timesyncd", "NetworkManager", "wpa_supplicant", "dhclient",
    "dhcpcd", "ModemManager", "networkd-dispat", "agetty", "getty", "login", "containerd", "dockerd",
    "containerd-shim", "snapd", "packagekitd", "udisksd", "upowerd", "thermald", "multipathd", "lxcfs",
    "qemu-ga", "tailscaled", "cloud-init", "haveged", "rngd", "acpid", "atd", "cupsd", "avahi-daemon",
    "gssproxy", "rpcbind", "unattended-upgr", "fwupd", "boltd", "colord", "rtkit-daemon", "power-profiles",
    "switcheroo-cont", "(sd-pam)", "init", "runit", "runsvdir", "runsv", "s6-svscan", "s6-supervise", "tini",
    "dumb-init", "catatonit",
))

# Excluded together with every descendant: scheduled maintenance is not the user's work.
TREES = frozenset(("cron", "crond", "anacron", "apt.systemd.dai", "unattended-upgr", "apt-compat",
                   "packagekitd"))

PREFIXES = ("systemd", "wr-agent")

TIMER_WCHANS = frozenset(("hrtimer_nanosleep", "do_nanosleep", "common_nsleep", "clock_nanosleep",
                          "__x64_sys_nanosleep", "__x64_sys_clock_nanosleep"))

# A process held by the kernel's freezer (the box going to sleep: cgroup v2's trap runs in get_signal, the system
# freezer's in __refrigerator): trapped there, not woken by its own sleep's end.
FROZEN_WCHANS = frozenset(("get_signal", "do_freezer_trap", "__refrigerator"))
# A sleep restarted with its time left (after a thaw, or SIGCONT after ^Z): the restart's own frames are the
# scheduler's, so the wchan names only the system-call entry. Read so only for a process that was in a timer sleep.
RESTART_WCHANS = frozenset(("do_syscall_64", "el0_svc_common", "invoke_syscall"))

# A FIFO open waiting for the other end: a pipeline stage whose partner is not there yet is still a job.
FIFO_WCHANS = frozenset(("wait_for_partner", "fifo_open"))
# A file lock asked for and not yet given (flock(2), fcntl's F_SETLKW, lockf): `flock deploy.lock ./deploy` queued
# behind the deploy before it. What it waits for is the holder's release, whatever the holder is doing meanwhile.
LOCK_WCHANS = frozenset(("locks_lock_inode_wait", "flock_lock_inode_wait", "fcntl_setlk", "do_lock_file_wait",
                         "posix_lock_inode_wait", "__x64_sys_flock", "__arm64_sys_flock"))

# A wait for any of several descriptors with a timeout (poll, select, epoll): a client that wakes every second to
# run its timers (curl's progress and timeouts) and goes back to the same wait, having done next to nothing, is
# still waiting. Matched as prefixes: the kernel's clones carry suffixes ("poll_schedule_timeout.constprop.0").
POLL_WCHANS = ("poll_schedule_timeout", "do_sys_poll", "do_select", "core_sys_select", "ep_poll", "do_epoll_wait")


def is_daemon(comm):
    return comm in DAEMONS or comm.startswith(PREFIXES)


_BASE_TREES = TREES
USER_COMMANDS = ()  # the user's entries with a space: matched against a process's command line


def set_user_names(names):
    """What the user marked "never work" for this host (user_exclusions.py), each excluded with its
    descendants (`watch`'s children are its work). A plain name matches the comm, like TREES; an entry
    with a space is a command (see command_excluded). Samplers read TREES and USER_COMMANDS per call."""
    global TREES, USER_COMMANDS
    plain = [n for n in names if not any(ch.isspace() for ch in n)]
    TREES = _BASE_TREES | frozenset(n[:15] for n in plain)
    USER_COMMANDS = tuple(n for n in names if any(ch.isspace() for ch in n))


def command_excluded(argv):
    """Whether argv (a list of str) is one of the user's commands, or that command with more arguments;
    the program may be given by its path or its base name ("python3 watch.py" matches
    "/usr/bin/python3 watch.py --poll")."""
    if not USER_COMMANDS or not argv:
        return False
    full = " ".join(" ".join(argv).split())  # whitespace collapsed, as the user's entries are
    short = " ".join(" ".join([argv[0].rsplit("/", 1)[-1], *argv[1:]]).split())
    for c in USER_COMMANDS:
        for text in (full, short):
            if text == c or text.startswith(c + " "):
                return True
    return False


def parse_exclude(text):
    """`--exclude-pid PID[:START]` -> (pid, start or None). START is the process's start time as
    /proc/PID/stat gives it (field 22, clock ticks since boot): with it the number binds only that process."""
    pid, sep, start = str(text).partition(":")
    if not pid.isdigit() or int(pid) <= 0 or (sep and not start.isdigit()):
        raise ValueError("not a PID or PID:START: %r" % text)
    return str(int(pid)), (str(int(start)) if sep else None)


def pin_exclude_argv(argv, start_of):
    """argv with every bare `--exclude-pid PID` pinned to the process that has that number now
    (`PID:START`, from `start_of(pid)`), and dropped if none has it; unchanged where start times cannot be
    read (`start_of` gives None for every pid: no /proc). Re-executions (a hand-off, a supervisor's restart)
    run the pinned argv, so a number handed out again later never binds another process."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        value = None
        if a == "--exclude-pid" and i + 1 < len(argv):
            value, step = argv[i + 1], 2
        elif a.startswith("--exclude-pid="):
            value, step = a[len("--exclude-pid="):], 1
        if value is None:
            out.append(a)
            i += 1
            continue
        i += step
        try:
            pid, start = parse_exclude(value)
        except ValueError:
            out += argv[i - step:i]  # argparse says what is wrong with it
            continue
        if start is None:
            start = start_of(pid)
            if start is None:
                if start_of("self") is None:
                    out += ["--exclude-pid", pid]  # no start times here (the ps sampler): as given
                continue  # gone already: nothing to leave out, now or after a restart
        out += ["--exclude-pid", "%s:%s" % (pid, start)]
    return out


def proc_start_time(pid, root="/proc"):
    """Field 22 of /proc/PID/stat (start time, clock ticks since boot) as text, or None."""
    try:
        with open("%s/%s/stat" % (root, pid), "rb") as f:
            raw = f.read(4096).decode("utf-8", "replace")
        return raw[raw.rfind(")") + 2:].split()[19]
    except (OSError, IndexError):
        return None
