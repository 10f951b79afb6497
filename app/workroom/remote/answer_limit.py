"""How much a host may send back in answer to one command, and the error past it.

A compromised host answering the install probe with an endless stream grew the app to gigabytes before the
command's time limit (docs/security.md). Every command run on a host through `SshConnection.exec` or
`LocalShell.run` is read up to its `AnswerLimit`, on stdout and stderr alike; past it the command is
abandoned and `AnswerTooLarge` says so in words. The limit is a named value so that it can follow its answer:
when the probe's answer arrives on another stream (the relay's, say), `PROBE_ANSWER` still bounds it.
"""

from __future__ import annotations

from dataclasses import dataclass

from workroom.remote.ssh_errors import SshError


@dataclass(frozen=True)
class AnswerLimit:
    """At most `max_bytes` on each of stdout and stderr; `what` names the answer in the error."""

    max_bytes: int
    what: str | None = None
    """"the agent probe"; None: the command itself is named."""

    def exceeded(self, command: str) -> AnswerTooLarge:
        from workroom.remote.ssh_errors import logged_command

        logged_command(command)
        what = self.what or "a command the app ran"
        return AnswerTooLarge(
            "The host sent too much",
            f"The host sent more than {self.max_bytes // 1024} KiB in answer to {what}; the rest was not read.",
            "Something on the host prints far more than this command does (a login script, or a compromised "
            "host); look at the host before connecting again.",
        )


class AnswerTooLarge(SshError):
    """A command's answer went past its `AnswerLimit`. Trying again would only repeat it."""

    retryable = False


COMMAND_ANSWER = AnswerLimit(256 * 1024)
"""Any command the app runs on a host (its own scripts answer in a few hundred bytes)."""
PROBE_ANSWER = AnswerLimit(64 * 1024, "the agent probe")
"""The install probe's answer: under 1 KiB of JSON, plus whatever a login script prints."""
