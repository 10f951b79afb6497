"""Process names and commands the user marked "never work" on this host: validated, saved beside the settings (0600,
atomically), applied to the classifier's exclusions. Changed only by a request, never by the tick."""

import json
import os

from wr_agent import exclusions
from wr_agent.settings import SettingsError

MAX_NAMES = 64
MAX_NAME = 64
MAX_COMMAND = 200
MAX_FILE_BYTES = 16384


def validate(names):
    """A sorted, de-duplicated list of names, or SettingsError saying what is wrong."""
    if not isinstance(names, list):
        raise SettingsError("invalid", "names must be a list of process names")
    if len(names) > MAX_NAMES:
        raise SettingsError("out_of_range", "at most %d names (got %d)" % (MAX_NAMES, len(names)))
    out = set()
    for n in names:
        if not isinstance(n, str) or not n.strip():
            raise SettingsError("invalid", "each name must be a non-empty string")
        n = " ".join(n.split())  # a command's arguments one space apart, as they are matched
        if " " in n:
            if len(n) > MAX_COMMAND or any(ord(ch) < 32 for ch in n):
                raise SettingsError("invalid", "%r is not a command (at most %d characters, no control characters)"
                                    % (n[:MAX_COMMAND], MAX_COMMAND))
        elif len(n) > MAX_NAME or any(ord(ch) < 32 or ch == "/" for ch in n):
            raise SettingsError("invalid", "%r is not a process name (at most %d characters, no '/' or control"
                                " characters)" % (n[:MAX_NAME], MAX_NAME))
        out.add(n)
    return sorted(out)


class UserExclusions(object):
    def __init__(self, path=None):
        self.path = path
        self.names = []
        self.problem = None
        if path is not None:
            self._load()
        exclusions.set_user_names(self.names)

    def _load(self):
        try:
            with open(self.path, "rb") as f:
                raw = f.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            return
        except OSError as exc:
            self.problem = "exclusions file %s unreadable: %s" % (self.path, exc.strerror or exc)
            return
        try:
            if len(raw) > MAX_FILE_BYTES:
                raise ValueError("too large")
            obj = json.loads(raw.decode("utf-8"))
            if not isinstance(obj, dict):
                raise ValueError("not an object")
            self.names = validate(obj.get("names"))
        except (ValueError, UnicodeDecodeError) as exc:
            self.problem = "exclusions file %s is unreadable (%s); none applied until the list is set again" % (
                self.path, getattr(exc, "message", exc))

    def set(self, names):
        """Validate, save, apply. Nothing changes on an error (SettingsError)."""
        names = validate(names)
        if self.path is not None and names != self.names:
            tmp = "%s.tmp.%d" % (self.path, os.getpid())
            data = json.dumps({"names": names}).encode("utf-8") + b"\n"
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                try:
                    os.fchmod(fd, 0o600)
                    os.write(fd, data)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(tmp, self.path)
            except OSError as exc:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise SettingsError("failed", "could not save exclusions to %s: %s"
                                    % (self.path, exc.strerror or exc)) from None
        self.names = names
        self.problem = None
        exclusions.set_user_names(names)
        return names
