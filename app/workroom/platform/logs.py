"""The app's log file: where a failure leaves a trace when stderr goes nowhere (an app started from Finder).

macOS: ~/Library/Logs/Workroom/workroom.log (Console.app shows that folder); elsewhere platformdirs' user
log folder; under WORKROOM_HOME its logs/ folder (workroom.paths decides). The file rotates (1 MB x 5).
Secrets never reach it: the app logs no passphrases, and a filter blanks anything that looks like one in
case a library does. See docs/macos.md.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import re
from pathlib import Path

LOG_FILE_NAME = "workroom.log"
MAX_BYTES = 1_000_000
BACKUPS = 5
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_SECRET = re.compile(r"(?i)\b(pass(?:word|phrase)?|secret|token|api[_-]?key)\b(\s*[=:]\s*)(\S+)")


class RedactSecrets(logging.Filter):
    """Blanks `password=...`, `passphrase: ...`, `token=...` and the like in every record's text."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        cleaned = _SECRET.sub(lambda m: f"{m.group(1)}{m.group(2)}[redacted]", text)
        if cleaned != text:
            record.msg, record.args = cleaned, None
        return True


def setup_logging(log_dir: Path, level: int = logging.INFO) -> Path:
    """Log to `log_dir`/workroom.log (folder made 0700, file 0600) and return the file's path."""
    log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = log_dir / LOG_FILE_NAME
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    handler = logging.handlers.RotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    handler.setFormatter(logging.Formatter(_FORMAT))
    handler.addFilter(RedactSecrets())
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "workroom_log", False)]:
        root.removeHandler(old)
        old.close()
    handler.workroom_log = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("paramiko").setLevel(logging.WARNING)  # its INFO lines are per-packet chatter
    return path


MAC_LOG_DIR = "~/Library/Logs/Workroom"


def app_log_dir(default: Path, *, workroom_home_set: bool, system: str | None = None) -> Path:
    """macOS keeps app logs in ~/Library/Logs/<App> (where Console.app looks); WORKROOM_HOME keeps its own."""
    system = os.uname().sysname if system is None else system
    if system == "Darwin" and not workroom_home_set:
        return Path(MAC_LOG_DIR).expanduser()
    return default
