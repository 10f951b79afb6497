"""Process names and commands the user marked "never work" on this host: validated, saved beside the settings (0600,
atomically), applied to the classifier's exclusions. Changed only by a request, never by the tick."""

import json

from wr_agent import exclusions
from wr_agent.runtime import read_data_file, write_atomically
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
            raw = read_data_file(self.path, MAX_FILE_BYTES)
            if raw is None:
                return
            obj = json.loads(raw.decode("utf-8"))
            if not isinstance(obj, dict):
                raise ValueError("not an object")
            self.names = validate(obj.get("names"))
        except OSError as exc:
            self.problem = "exclusions file %s unreadable: %s" % (self.path, exc.strerror or exc)
        except ValueError as exc:  # a UnicodeDecodeError and a SettingsError are ValueErrors too
            self.problem = "exclusions file %s is unreadable (%s); none applied until the list is set again" % (
                self.path, getattr(exc, "message", exc))

    def change(self, add, remove):
        """The names held now, less `remove`, with `add` (each checked as `validate` checks a list); saved and
        applied as `set` does. Removing a name that is not there is no error."""
        add, remove = validate(add), set(validate(remove))
        return self.set([n for n in self.names if n not in remove] + add)

    def set(self, names):
        """Validate, save, apply. Nothing changes on an error (SettingsError)."""
        names = validate(names)
        if self.path is not None and names != self.names:
            try:
                write_atomically(self.path, json.dumps({"names": names}).encode("utf-8") + b"\n")
            except OSError as exc:
                raise SettingsError("failed", "could not save exclusions to %s: %s"
                                    % (self.path, exc.strerror or exc)) from None
        self.names = names
        self.problem = None
        exclusions.set_user_names(names)
        return names
