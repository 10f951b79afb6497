"""The events a session gives the ways its box is kept awake or let go (`HostSession`'s keepers: the outside
keep-awake of a request-metered box, sessions/keepawake_task.py; a platform's own clock, sessions/platform_keeper.py).
Which keepers a session holds follows from the host's metering row; each takes the events it needs."""

from __future__ import annotations

from workroom.core.protocol import Status


class SessionKeeper:
    """One way a session's box is kept up or let go, told of the session's events (each does nothing here)."""

    def run_started(self) -> None:
        """A run begins: a connect or a reconnect."""

    def link_up(self) -> None:
        """The agent's link is live and its first status taken."""

    def on_status(self, status: Status) -> None:
        """Every status the agent gives (pushed, or an answer)."""

    def link_down(self) -> None:
        """The link is torn down: lost, let go, or disconnected."""

    def stop(self) -> None:
        """The user disconnects: nothing of it runs any more."""
