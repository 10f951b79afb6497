"""What the last install step found or did on a host (remote/agent_install.py makes it; the faces show it)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
