"""The one sshd_config both the simulator's boxes and the tests' loopback sshd use.

A single writer keeps the two servers alike: key-only logins for one unprivileged user, no PAM, nothing
printed at login (a login banner would corrupt the agent's protocol stream), and enough session and
start-up slots for the tests' bursts of connections.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd", "/usr/bin/sshd")


def find_sshd() -> str | None:
    """The OpenSSH server binary, or None when it is not installed."""
    for path in SSHD_CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    return shutil.which("sshd")


def write_sshd_config(path: Path, *, listen: str, port: int, user: str, host_key: Path,
                      pid_file: Path | None = None, authorized_keys: str = ".ssh/authorized_keys") -> Path:
    """Write the config to `path` and return it. `pid_file=None` writes no PID file."""
    path.write_text("\n".join([
        f"ListenAddress {listen}",
        f"Port {port}",
        f"HostKey {host_key}",
        f"PidFile {pid_file if pid_file is not None else 'none'}",
        f"AuthorizedKeysFile {authorized_keys}",
        f"AllowUsers {user}",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",  # with UsePAM off a "*" password means "no password, not locked"
        "PermitRootLogin no",
        "StrictModes no",
        "PrintMotd no",
        "PrintLastLog no",
        "UseDNS no",
        "X11Forwarding no",
        "AllowTcpForwarding yes",
        "MaxStartups 50:30:100",
        "MaxSessions 50",
        "Subsystem sftp internal-sftp",
        "LogLevel ERROR",
        "",
    ]))
    return path
