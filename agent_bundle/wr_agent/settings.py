"""Ceiling settings: one row per field (FIELDS), validation, and the atomic 0600 settings file beside the socket.

The app keeps the same table (workroom.core.ceiling.SETTING_FIELDS); tests/integration/test_protocol_contract.py
probes these bounds with the app's. A file that lacks a field (written by an older agent) takes its default;
fields this agent does not know (written by a newer one) are kept and saved again, never a reason to refuse it.
"""

import json
import math

from wr_agent.runtime import read_data_file, write_atomically

MIN_DURATION = 30.0
MAX_DURATION = 30 * 24 * 3600.0
DEFAULT_CEILING = 4 * 3600.0
DEFAULT_PROMPT_TIMEOUT = 600.0
DURATION, YES_NO = "duration", "yes/no"


class Field(object):
    """One setting: its name, kind (a duration within the bounds, or yes/no) and default. `required` ones must
    be in every `settings` request (every app sends them); a field added later is not, and a request from an
    older app that lacks it keeps the value in force."""

    __slots__ = ("default", "kind", "name", "required")

    def __init__(self, name, kind, default, required=False):
        self.name, self.kind, self.default, self.required = name, kind, default, required


FIELDS = (
    Field("ceiling_seconds", DURATION, DEFAULT_CEILING, required=True),
    Field("prompt_timeout_seconds", DURATION, DEFAULT_PROMPT_TIMEOUT, required=True),
    Field("ask_at_ceiling", YES_NO, False, required=True),
)
NAMES = tuple(f.name for f in FIELDS)


class SettingsError(ValueError):
    """A settings value the agent refuses; `code` is the protocol error code."""

    def __init__(self, code, message):
        ValueError.__init__(self, message)
        self.code = code
        self.message = message


class Settings(object):
    """The user-facing ceiling settings, one attribute per row of FIELDS (immutable by convention). `extra`:
    fields of a newer agent's file, kept so saving again loses nothing."""

    __slots__ = (*NAMES, "extra")

    def __init__(self, *values, **named):
        given = dict(zip(NAMES, values))
        given.update(named)
        for field in FIELDS:
            value = given.get(field.name, field.default)
            setattr(self, field.name, bool(value) if field.kind == YES_NO else float(value))
        self.extra = {}

    def to_dict(self):
        return dict((name, getattr(self, name)) for name in NAMES)

    def __eq__(self, other):
        return isinstance(other, Settings) and self.to_dict() == other.to_dict() and self.extra == other.extra

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


def _check(field, value, min_duration):
    if field.kind == DURATION:
        return check_duration(field.name, value, min_duration)
    if not isinstance(value, bool):
        raise SettingsError("invalid", "%s must be true or false" % field.name)
    return value


def validate(obj, min_duration=MIN_DURATION, current=None):
    """Settings from a `settings` request: every required field must be there; one added later that an older
    app does not send keeps `current`'s value (or its default). Raises SettingsError."""
    if not isinstance(obj, dict):
        raise SettingsError("invalid", "settings must be a JSON object")
    values = {}
    for field in FIELDS:
        if field.name in obj:
            values[field.name] = _check(field, obj[field.name], min_duration)
        elif field.required:
            raise SettingsError("invalid", "%s is required" % field.name)
        elif current is not None:
            values[field.name] = getattr(current, field.name)
    return Settings(**values)


def from_file(obj, min_duration=MIN_DURATION):
    """Settings from the settings file (or a hand-off's state): a field it lacks (an older agent wrote it)
    takes its default, fields it has that this agent does not know are kept in `extra`. Raises SettingsError."""
    if not isinstance(obj, dict):
        raise SettingsError("invalid", "settings must be a JSON object")
    settings = Settings(**dict((f.name, _check(f, obj[f.name], min_duration)) for f in FIELDS if f.name in obj))
    settings.extra = dict((k, v) for k, v in obj.items() if k not in NAMES)
    return settings


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
        return from_file(obj, min_duration), None
    except SettingsError as exc:
        return None, "settings file %s is invalid: %s" % (path, exc.message)


def save(path, settings):
    """Write atomically (temp file, fsync, rename) with mode 0600; a failed save leaves nothing behind."""
    data = dict(settings.extra)
    data.update(settings.to_dict())
    write_atomically(path, json.dumps(data, sort_keys=True).encode("utf-8") + b"\n")
