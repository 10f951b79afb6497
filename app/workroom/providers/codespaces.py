"""GitHub Codespaces, through the user's logged-in `gh` CLI (docs/providers.md, "Coder and Codespaces").

A codespace stops after its idle timeout (5-240 min, 30 by default) without activity. There is no call to
extend it; what keeps it up from outside is a client's activity report, which `gh codespace ssh --stdio` sends
about once a minute while bytes cross its tunnel (the app's session traffic while the box is busy). The app
reads a codespace with `gh codespace view --json` (and, for a stopped one, the REST resource's stop notice
through `gh api`), reaches it with `gh codespace ssh -c NAME --stdio` only right after that read says
Available (`--stdio` starts a stopped codespace and has no opt-out: the race left is documented), and starts
one only for the user's explicit wake, through the REST start call (`gh api --method POST
user/codespaces/NAME/start`: `gh` has no start command).
"""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

from workroom.core.host_text import plain
from workroom.core.hosts import Host
from workroom.core.platform_clock import PlatformClock, PlatformRules, PlatformState
from workroom.core.provider_specs import CODESPACE_NAME
from workroom.providers.bounded_cli import CliAnswer, CliProblem, run_cli
from workroom.providers.platform_cli import CLI_TIMEOUT_SECONDS, PlatformProvider, parse_json, platform_time

CODESPACES_RULES = PlatformRules(
    min_extension_seconds=0.0, extend_step_seconds=0.0, lead_seconds=0.0,  # no extend call exists
    read_interval_seconds=60.0, release_after_seconds=3.0, outside_use_grace_seconds=2 * 60,
    start_timeout_seconds=10 * 60)

STATES = {
    "Available": PlatformState.RUNNING, "Shutdown": PlatformState.STOPPED, "ShuttingDown": PlatformState.STOPPING,
    "Starting": PlatformState.STARTING, "Queued": PlatformState.STARTING, "Provisioning": PlatformState.STARTING,
    "Created": PlatformState.STARTING, "Awaiting": PlatformState.STARTING, "Rebuilding": PlatformState.STARTING,
    "Updating": PlatformState.STARTING, "Exporting": PlatformState.STARTING, "Failed": PlatformState.FAILED,
    "Unavailable": PlatformState.FAILED, "Deleted": PlatformState.DELETED, "Archived": PlatformState.DELETED,
    "Moved": PlatformState.DELETED,
}
"""The REST API's codespace states -> the app's words; any other ("Unknown", a newer one) is unknown."""
VIEW_FIELDS = "name,state,idleTimeoutMinutes,lastUsedAt"
AUTOMATIC_KEY = Path("~/.ssh/codespaces.auto")
"""The key `gh codespace ssh` makes and uploads when given none (cli/cli: automaticPrivateKeyName)."""


def codespace_clock(data: object, read_at: float, stop_notice: str | None = None) -> PlatformClock:
    """`gh codespace view --json name,state,idleTimeoutMinutes,lastUsedAt` as the app's clock. `lastUsedAt` is
    the codespace's last start (the REST docs say so), so it names the run; there is no deadline to read."""
    if not isinstance(data, dict) or not isinstance(data.get("state"), str):
        return PlatformClock(state=PlatformState.UNKNOWN, said="gh says: its answer has no state", read_at=read_at)
    word = data["state"]
    state = STATES.get(word, PlatformState.UNKNOWN)
    said = plain(word, 60) if state is not PlatformState.UNKNOWN else f"gh says: the codespace is {plain(word, 60)}"
    minutes = data.get("idleTimeoutMinutes")
    timeout = float(minutes) * 60 if isinstance(minutes, int) and not isinstance(minutes, bool) and minutes > 0 \
        else None
    last_used = data.get("lastUsedAt")
    used, odd = platform_time(last_used, read_at, "last use (lastUsedAt)", ahead=False)
    return PlatformClock(state=state, said=said, read_at=read_at, idle_timeout_seconds=timeout,
                         last_used=used, build=last_used if isinstance(last_used, str) else None,
                         stop_reason=stop_notice if state is PlatformState.STOPPED else None,
                         odd_times=plain("gh says: " + odd, 300) if odd else None)


class CodespacesProvider(PlatformProvider):
    cli = "gh"
    box_field = CODESPACE_NAME
    default_rules = CODESPACES_RULES
    default_user = "codespace"
    """The user of GitHub's default dev container image (`gh codespace ssh --config` prints a codespace's own)."""

    def identity_files(self, host: Host) -> tuple[Path, ...]:
        return super().identity_files(host) or (AUTOMATIC_KEY.expanduser(),)

    def proxy_argv(self, host: Host) -> list[str]:
        key = self.identity_files(host)[0]
        return ["gh", "codespace", "ssh", f"--codespace={self.box_name(host)}", "--stdio", "--", "-i", str(key)]

    async def read_clock(self, host: Host) -> PlatformClock:
        name = self.box_name(host)
        answer = await run_cli(["gh", "codespace", "view", f"--codespace={name}", "--json", VIEW_FIELDS],
                               timeout=CLI_TIMEOUT_SECONDS)
        data = parse_json(answer)
        notice = None
        if isinstance(data, dict) and STATES.get(str(data.get("state"))) is PlatformState.STOPPED:
            notice = await self._stop_notice(name)
        return codespace_clock(data, time.time(), notice)

    async def _stop_notice(self, name: str) -> str | None:
        """The REST resource's `last_known_stop_notice` (why it last stopped, in GitHub's words), or None."""
        try:
            data = parse_json(await run_cli(["gh", "api", f"user/codespaces/{quote(name, safe='')}"],
                                            timeout=CLI_TIMEOUT_SECONDS))
        except CliProblem:
            return None
        notice = data.get("last_known_stop_notice") if isinstance(data, dict) else None
        return plain(notice, 200) if isinstance(notice, str) and notice else None

    async def start_box(self, host: Host) -> CliAnswer:
        path = f"user/codespaces/{quote(self.box_name(host), safe='')}/start"  # a segment, whatever it holds
        return await run_cli(["gh", "api", "--method", "POST", path],
                             timeout=CLI_TIMEOUT_SECONDS)

    async def list_boxes(self) -> list[tuple[str, str]]:
        data = parse_json(await run_cli(["gh", "codespace", "list", "--json", "name,state"],
                                        timeout=CLI_TIMEOUT_SECONDS))
        if not isinstance(data, list):
            return []
        return [(c["name"], plain(str(c.get("state", "")), 60)) for c in data
                if isinstance(c, dict) and isinstance(c.get("name"), str)]
