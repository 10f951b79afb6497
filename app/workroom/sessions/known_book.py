"""What the engine knows of each host between runs and faces (core.last_known), as last_verdicts.json keeps it
(workroom.known_records): read at start, written when what a face would say changes, taken again when another
process wrote it (`reload`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from workroom.core.connection import ConnectionState
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.last_known import LastKnown
from workroom.known_records import VERDICTS_FILE_NAME, read_records, verdicts_path, write_record

log = logging.getLogger(__name__)

FileWriter = Callable[[Callable[[], object], str], None]
"""Runs a file write in order off the loop's thread, logging the second argument when it fails (Engine._write)."""


class KnownBook:
    """Every host's record (`records`: name -> core.last_known record) and which hosts are heard live now (their
    file entry waits until they stop being heard; another process's entry for them is not taken meanwhile)."""

    def __init__(self, state_dir: Path, write: FileWriter) -> None:
        self.path = verdicts_path(state_dir)
        self.records: dict[str, dict[str, object]] = read_records(self.path)
        self._heard_live: set[str] = set()
        self._write = write

    def of(self, name: str) -> LastKnown:
        """What the app last knew of a host (any face, any run)."""
        return LastKnown.from_record(self.records.get(name))

    def remember(self, snapshot: HostSnapshot) -> None:
        """Keep the one record of what is known: written when what a face would say changes, and when the host
        stops being heard live (so the next run's "N min ago" is right)."""
        name = snapshot.host.name
        before = self.of(name)
        now = time.time()
        info = snapshot.connection
        after = before
        if info.spec.asleep:
            after = before.asleep(now)
            clock = info.platform
            if clock is not None and clock.stopped_at is not None and clock.stop_reason is not None:
                after = after.platform_stopped(clock.stopped_at, clock.stop_reason)
        elif info.spec.live and snapshot.status is not None:
            after = before.seen(snapshot.status, now)
        elif info.state is ConnectionState.RELEASED:  # the next start need not connect
            clock = info.platform
            after = before.let_go(now, clock.build if clock is not None else None)
        heard_before = name in self._heard_live
        if info.spec.live:
            self._heard_live.add(name)
        else:
            self._heard_live.discard(name)
        if after == before:
            return
        self.records[name] = after.to_record()
        if not before.differs_in_meaning(after) and not (heard_before and not info.spec.live):
            return  # only a newer "seen at" while live: in memory now, on disk when it stops being heard
        self.save(name)

    def save(self, name: str) -> None:
        """Write `name`'s record as it is now (or its absence) into the file as it is then: the other hosts'
        records, another process's included, stay as they are."""
        record, path = self.records.get(name), self.path
        self._write(lambda: write_record(path, name, record), f"cannot save {path}")

    def forget(self, name: str) -> None:
        if self.records.pop(name, None) is not None:
            self.save(name)

    def reload(self) -> None:
        """Take what another process wrote, for every host not heard live here."""
        stored = read_records(self.path)
        changed = [name for name in set(stored) | set(self.records)
                   if name not in self._heard_live and stored.get(name) != self.records.get(name)]
        for name in changed:
            if name in stored:
                self.records[name] = stored[name]
            else:
                self.records.pop(name, None)
        if changed:
            log.info("%s changed outside the app: %s", VERDICTS_FILE_NAME, ", ".join(sorted(changed)))
