"""macOS 15+ Local Network privacy: an app the user has not allowed gets EHOSTUNREACH, at once, for every
address on the local network (private and link-local ranges). To the user that looks like "host
unreachable" while Terminal's ssh works; name the real cause and where to allow it (docs/macos.md).
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket

BLOCKED_TITLE = "Local network access blocked"
BLOCKED_MESSAGE = "macOS may be blocking local network access for Workroom, so {where} cannot be reached."
BLOCKED_HINT = "Allow it in System Settings › Privacy & Security › Local Network, then connect again."
QUICK_SECONDS = 1.0
"""A real unreachable host fails after ARP gives up (seconds); the privacy block fails at once."""


def _system() -> str:
    return os.uname().sysname


def is_local_address(text: str) -> bool:
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return False
    return (address.is_private or address.is_link_local) and not address.is_loopback


def resolved_addresses(host: str, port: int) -> list[str]:
    try:
        return [str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]
    except OSError:
        return []


def looks_blocked_by_privacy(exc: OSError, host: str, port: int, elapsed: float, system: str | None = None) -> bool:
    """EHOSTUNREACH within QUICK_SECONDS to a local-network address, on macOS."""
    if (system or _system()) != "Darwin" or exc.errno != errno.EHOSTUNREACH or elapsed > QUICK_SECONDS:
        return False
    return any(is_local_address(a) for a in ([host] if is_local_address(host) else resolved_addresses(host, port)))
