"""Coder workspaces, through the user's logged-in `coder` CLI (docs/providers.md, "Coder and Codespaces").

A workspace stops at a deadline that every activity pushes back by the template's activity bump (1 h by
default); an open SSH session through the Coder agent is activity. The app reads a workspace's build status,
deadline, maximum deadline and last use from `coder list -o json`, reaches it with `coder ssh --stdio
--disable-autostart` (the flag Coder added in 2.5: without it a connect starts a stopped workspace, so an older
CLI is refused, never used without it), extends a busy one with `coder schedule extend WS DURATION` (older CLIs:
`override-stop`), and starts one only for the user's explicit wake (`coder start`).
"""

from __future__ import annotations

import subprocess
import time
from typing import Any

from workroom.core.errors import UserError
from workroom.core.host_text import plain
from workroom.core.hosts import Host
from workroom.core.platform_clock import PlatformClock, PlatformRules, PlatformState
from workroom.core.provider_specs import WORKSPACE_NAME, ProviderSpec
from workroom.providers.base import ProviderContext
from workroom.providers.bounded_cli import CliAnswer, CliProblem, run_cli
from workroom.providers.platform_cli import (
    CLI_TIMEOUT_SECONDS,
    PlatformError,
    PlatformProvider,
    go_duration,
    parse_json,
    platform_time,
)

CODER_RULES = PlatformRules(
    min_extension_seconds=30 * 60,  # `coder schedule extend`: "must be at least 30 minutes in the future"
    extend_step_seconds=30 * 60, lead_seconds=10 * 60, read_interval_seconds=60.0, release_after_seconds=3.0,
    outside_use_grace_seconds=3 * 60, start_timeout_seconds=10 * 60)
"""Coder's numbers; `outside_use_grace_seconds` covers the agent's stats report and the server's batched
last-used update after the app's own session ends."""

STATUS_STATES = {
    "running": PlatformState.RUNNING, "stopped": PlatformState.STOPPED, "pending": PlatformState.STARTING,
    "starting": PlatformState.STARTING, "stopping": PlatformState.STOPPING, "failed": PlatformState.FAILED,
    "canceling": PlatformState.FAILED, "canceled": PlatformState.FAILED, "deleting": PlatformState.DELETED,
    "deleted": PlatformState.DELETED,
}
"""codersdk.WorkspaceStatus -> the app's words; a status not here is unknown, never a guess."""
JOB_STATES = {("succeeded", "start"): "running", ("succeeded", "stop"): "stopped", ("running", "start"): "starting",
              ("pending", "start"): "pending", ("running", "stop"): "stopping", ("failed", "start"): "failed",
              ("failed", "stop"): "failed", ("succeeded", "delete"): "deleted", ("running", "delete"): "deleting"}
"""An older CLI's build has no `status`: derived from its job's status and transition, as Coder derives it."""
STOP_REASONS = {"autostop": "it reached its deadline (autostop)", "initiator": "someone stopped it",
                "dormancy": "it went dormant"}
TOO_SHORT = "at least 30 minutes"
"""`coder schedule extend` refuses a shorter extension with this on stdout, and exits 0."""


def split_workspace(reference: str) -> tuple[str | None, str]:
    """"owner/name.agent" -> (owner or None, name): the list names workspaces without their agent."""
    owner, _, rest = reference.rpartition("/")
    return (owner or None), rest.partition(".")[0]


def coder_clock(data: object, name: str, owner: str | None, read_at: float) -> PlatformClock:
    """The workspace `name` in `coder list -o json`'s answer, as the app's clock (UNKNOWN when not there or not
    understood). The JSON is codersdk.Workspace per row; fields the app does not know are ignored."""
    rows = data if isinstance(data, list) else []
    found = [w for w in rows if isinstance(w, dict) and w.get("name") == name
             and (owner is None or w.get("owner_name") == owner)]
    if not found:
        return PlatformClock(state=PlatformState.UNKNOWN, read_at=read_at,
                             said=f"coder lists no workspace called {plain(name, 100)}")
    workspace: dict[str, Any] = found[0]
    build = workspace.get("latest_build") if isinstance(workspace.get("latest_build"), dict) else {}
    assert isinstance(build, dict)
    job = build.get("job") if isinstance(build.get("job"), dict) else {}
    assert isinstance(job, dict)
    status = build.get("status")
    if not isinstance(status, str):
        status = JOB_STATES.get((str(job.get("status")), str(build.get("transition"))), "")
    state = STATUS_STATES.get(status, PlatformState.UNKNOWN)
    said = plain(status or "in a state it does not name", 100)
    if state is PlatformState.UNKNOWN:
        said = f"coder says: the workspace is {said}"
    odd: list[str] = []

    def checked(value: object, what: str, ahead: bool = True) -> float | None:
        seconds, words = platform_time(value, read_at, what, ahead=ahead)
        if words is not None:
            odd.append(words)
        return seconds

    running = state is PlatformState.RUNNING
    deadline = checked(build.get("deadline"), "deadline") if running else None
    max_deadline = checked(build.get("max_deadline"), "limit (max_deadline)") if running else None
    if deadline is not None and max_deadline is not None and max_deadline < deadline - 1.0:
        odd.append("its limit (max_deadline) comes before its deadline")
        max_deadline = None
    reason = build.get("reason")
    stop_reason = None
    if state is PlatformState.STOPPED and isinstance(reason, str):
        stop_reason = STOP_REASONS.get(reason, f"a build for {plain(reason, 60)} stopped it")
        if reason == "initiator" and isinstance(build.get("initiator_name"), str):
            stop_reason = f"{plain(build['initiator_name'], 60)} stopped it"
    number = build.get("build_number")
    return PlatformClock(
        state=state, said=said, read_at=read_at, deadline=deadline,
        max_deadline=max_deadline,
        last_used=checked(workspace.get("last_used_at"), "last use", ahead=False),
        build=str(number) if isinstance(number, int) and not isinstance(number, bool) else None,
        stop_reason=stop_reason,
        stopped_at=checked(job.get("completed_at"), "stop time", ahead=False) if stop_reason else None,
        # Extended only a deadline read, in range and still ahead, under a limit read too (or none given).
        can_extend=deadline is not None and deadline > read_at and not odd,
        odd_times=plain("coder says: " + "; ".join(odd), 300) if odd else None)


class CoderProvider(PlatformProvider):
    cli = "coder"
    box_field = WORKSPACE_NAME
    default_rules = CODER_RULES

    def __init__(self, context: ProviderContext, spec: ProviderSpec, rules: PlatformRules | None = None) -> None:
        super().__init__(context, spec, rules)
        self._disables_autostart: bool | None = None

    def proxy_argv(self, host: Host) -> list[str]:
        if not self._can_disable_autostart():
            raise PlatformError(
                "The coder CLI is too old",
                "Your `coder` has no --disable-autostart (Coder 2.5 and later have it): connecting through it would "
                "start a stopped workspace, so the app does not.",
                "Update the coder CLI to your deployment's version, then connect again.")
        return ["coder", "ssh", "--stdio", "--disable-autostart", "--", self.box_name(host)]

    def _can_disable_autostart(self) -> bool:
        """Blocking (the connect's worker thread), asked once: does this `coder ssh` take --disable-autostart?"""
        if self._disables_autostart is None:
            try:
                done = subprocess.run(["coder", "ssh", "--help"], capture_output=True, timeout=CLI_TIMEOUT_SECONDS,
                                      stdin=subprocess.DEVNULL, check=False)
            except (OSError, subprocess.TimeoutExpired):
                return False  # asked again at the next connect
            self._disables_autostart = b"--disable-autostart" in done.stdout + done.stderr
        return self._disables_autostart

    async def read_clock(self, host: Host) -> PlatformClock:
        owner, name = split_workspace(self.box_name(host))
        argv = ["coder", "list", "--output", "json"]
        if owner is not None:
            argv += ["--search", f"owner:{owner} name:{name}"]
        answer = await run_cli(argv, timeout=CLI_TIMEOUT_SECONDS)
        return coder_clock(parse_json(answer), name, owner, time.time())

    async def extend_deadline(self, host: Host, until: float) -> None:
        box, duration = self.box_name(host), go_duration(until - time.time())
        try:
            answer = await run_cli(["coder", "schedule", "extend", "--", box, duration], timeout=CLI_TIMEOUT_SECONDS)
            if not answer.ok and "unknown" in answer.said().lower():  # a CLI from before `extend`
                answer = await run_cli(["coder", "schedule", "override-stop", "--", box, duration],
                                       timeout=CLI_TIMEOUT_SECONDS)
        except CliProblem as problem:
            raise UserError("Not extended", f"coder says: {problem.words}", "") from None
        if not answer.ok or TOO_SHORT in answer.stdout.decode("utf-8", "replace"):
            raise UserError("Not extended", f"coder says: {answer.said()}", "")

    async def start_box(self, host: Host) -> CliAnswer:
        return await run_cli(["coder", "start", "--yes", "--", self.box_name(host)],
                             timeout=self.rules.start_timeout_seconds)

    async def list_boxes(self) -> list[tuple[str, str]]:
        data = parse_json(await run_cli(["coder", "list", "--output", "json"], timeout=CLI_TIMEOUT_SECONDS))
        out = []
        for workspace in data if isinstance(data, list) else []:
            if isinstance(workspace, dict) and isinstance(workspace.get("name"), str):
                clock = coder_clock([workspace], workspace["name"], None, time.time())
                out.append((workspace["name"], clock.said))
        return out
