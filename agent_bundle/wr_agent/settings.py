"""Ceiling settings: bounds, validation, and the atomic 0600 settings file beside the socket."""

import json
import math

from wr_agent.runtime import read_data_file, write_atomically

MIN_DURATION = 30.0
MAX_DURATION = 30 * 24 * 3600.0
DEFAULT_CEILING = 4 * 3600.0
DEFAULT_PROMPT_TIMEOUT = 600.0
FIELDS = ("ceiling_seconds", "prompt_timeout_seconds", "ask_at_ceiling")


class SettingsError(ValueError):
    """A settings value the agent refuses; `code` is the protocol error code."""

    def __init__(self, code, message):
        ValueError.__init__(self, message)
        self.code = code
        self.message = message


class Settings(object):
    """The three user-facing ceiling settings (immutable by convention)."""

    __slots__ = ("ask_at_ceiling", "ceiling_seconds", "prompt_timeout_seconds")

    def __init__(self, ceiling_seconds=DEFAULT_CEILING, prompt_timeout_seconds=DEFAULT_PROMPT_TIMEOUT,
                 ask_at_ceiling=False):
        self.ceiling_seconds = float(ceiling_seconds)
        self.prompt_timeout_seconds = float(prompt_timeout_seconds)
        self.ask_at_ceiling = bool(ask_at_ceiling)

    def to_dict(self):
        return {"ceiling_seconds": self.ceiling_seconds,
                "prompt_timeout_seconds": self.prompt_timeout_seconds,
                "ask_at_ceiling": self.ask_at_ceiling}

    def __eq__(self, other):
        return isinstance(other, Settings) and self.to_dict() == other.to_dict()

    def __ne__(self, other):
        return not self.__eq__(other)

    def __repr__(self):
        return "Settings(%r)" % (self.to_dict(),)


def check_duration(name, value, min_duration=MIN_DURATION):
    """Return `value` as a float or raise SettingsError naming the field and the bounds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingsError("invalid", "%s must be a number of seconds" % name)
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float (e.g. 400 digits) is out of range, not a crash
        number = math.inf if value > 0 else -math.inf
    if not math.isfinite(number) or number < min_duration or number > MAX_DURATION or number <= 0:
        raise SettingsError("out_of_range", "%s must be between %.10g and %.10g seconds (got %r)"
                            % (name, min_duration, MAX_DURATION, number))
    return number


def validate(obj, min_duration=MIN_DURATION):
    """Settings from a request or file object; all three fields required. Raises SettingsError."""
    if not isinstance(obj, dict):
        raise SettingsError("invalid", "settings must be a JSON object")
    for name in FIELDS:
        if name not in obj:
            raise SettingsError("invalid", "%s is required" % name)
    ask = obj["ask_at_ceiling"]
    if not isinstance(ask, bool):
        raise SettingsError("invalid", "ask_at_ceiling must be true or false")
    return Settings(check_duration("ceiling_seconds", obj["ceiling_seconds"], min_duration),
                    check_duration("prompt_timeout_seconds", obj["prompt_timeout_seconds"], min_duration),
                    ask)


def load(path, min_duration=MIN_DURATION):
    """(settings or None, error or None). A missing file is no error; a bad one is explained."""
    try:
        raw = read_data_file(path, 65536)
    except ValueError as exc:  # not a regular file (a FIFO), or too large
        return None, "settings file %s is corrupt (%s)" % (path, exc)
    except OSError as exc:
        return None, "settings file %s unreadable: %s" % (path, exc.strerror or exc)
    if raw is None:
        return None, None
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        return None, "settings file %s is corrupt (%s)" % (path, exc)
    try:
        return validate(obj, min_duration), None
    except SettingsError as exc:
        return None, "settings file %s is invalid: %s" % (path, exc.message)


def save(path, settings):
    """Write atomically (temp file, fsync, rename) with mode 0600; a failed save leaves nothing behind."""
    write_atomically(path, json.dumps(settings.to_dict(), sort_keys=True).encode("utf-8") + b"\n")
