"""The host aliases in ~/.ssh/config, for the add-host dialog's picker (as VS Code's Remote Explorer offers).

Only plain aliases count: a `Host` pattern with `*`, `?` or `!` names no one machine. `Include`d files are
followed (relative to ~/.ssh, globs allowed), at most `MAX_DEPTH` deep; unreadable files are skipped.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

MAX_DEPTH = 5


def default_config() -> Path:
    return Path(os.path.expanduser("~/.ssh/config"))


def config_aliases(path: Path | None = None, _depth: int = 0) -> list[str]:
    """Every plain alias, in file order, each once."""
    path = path or default_config()
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    out: list[str] = []
    for line in lines:
        words = line.strip().replace("=", " ", 1).split()
        if not words or words[0].startswith("#"):
            continue
        key = words[0].lower()
        if key == "host":
            out += [w for w in words[1:] if not any(ch in w for ch in "*?!") and w not in out]
        elif key == "include" and _depth < MAX_DEPTH:
            for pattern in words[1:]:
                full = os.path.expanduser(pattern)
                if not os.path.isabs(full):
                    full = str(path.parent / full)
                for included in sorted(glob.glob(full)):
                    out += [a for a in config_aliases(Path(included), _depth + 1) if a not in out]
    return out
