"""last_verdicts.json: the one record of what is known of each host (core.last_known), kept by every face.

The desktop app's engine and each command write it (a locked read-modify-write of one host's entry, so another
process's entries stay as they are); a look without the app reads it and marks a box its provider says is
asleep (cli/look.py). A damaged file, or a damaged or foreign entry, reads as nothing known.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workroom.core.last_known import LastKnown
from workroom.storage import MAX_FILE_BYTES, read_json_object, update_json

VERDICTS_FILE_NAME = "last_verdicts.json"


def verdicts_path(state_dir: Path) -> Path:
    return state_dir / VERDICTS_FILE_NAME


def read_records(path: Path) -> dict[str, dict[str, object]]:
    """Every host's stored record that says something (never waits on a FIFO in the file's place)."""
    data = read_json_object(path, MAX_FILE_BYTES)
    records = {k: LastKnown.from_record(v) for k, v in data.items() if isinstance(k, str) and isinstance(v, dict)}
    return {k: known.to_record() for k, known in records.items() if known.known or known.asleep_since is not None}


def write_record(path: Path, name: str, record: Mapping[str, object] | None) -> None:
    """Write `name`'s record (None: remove it) into the file as it is now; the other hosts' records stay."""
    def change(data: dict[str, Any]) -> dict[str, Any]:
        if record is None:
            data.pop(name, None)
        else:
            data[name] = dict(record)
        return data

    update_json(path, change, limit=MAX_FILE_BYTES)
