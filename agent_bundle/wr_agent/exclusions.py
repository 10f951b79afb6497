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

# A FIFO open waiting for the other end: a pipeline stage whose partner is not there yet is still a job.
FIFO_WCHANS = frozenset(("wait_for_partner", "fifo_open"))


def is_daemon(comm):
    return comm in DAEMONS or comm.startswith(PREFIXES)
