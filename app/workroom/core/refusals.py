"""A value a person typed that a model refused, in words that name what they typed (`--port`, not `port`), never
pydantic's own message with its type names, input echo and documentation link."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError


def _shown(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value) if isinstance(value, int) else repr(value)


def _words(error: Mapping[str, Any]) -> str:
    kind, ctx = error.get("type", ""), error.get("ctx") or {}
    got = _shown(error.get("input"))
    bounds = {"less_than_equal": ("at most", "le"), "less_than": ("less than", "lt"),
              "greater_than_equal": ("at least", "ge"), "greater_than": ("more than", "gt")}
    if kind in bounds:
        words, key = bounds[kind]
        return f"must be {words} {_shown(ctx.get(key))} (got {got})"
    if kind == "finite_number":
        return f"must be a finite number (got {got})"
    if kind == "literal_error":
        return f"must be {ctx.get('expected', 'one of the values allowed')} (got {got})"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"must be a whole number (got {got})"
    if kind in ("float_type", "float_parsing"):
        return f"must be a number (got {got})"
    message = str(error.get("msg", "is not valid"))
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    return message[:1].lower() + message[1:]


def refusal_words(error: ValidationError, called: Mapping[str, str]) -> str:
    """Each refused field as `called` names it (a field not in `called` by its own name), with what is wrong:
    "--port: must be at most 65535 (got 70000)"; several are joined with "; "."""
    parts = []
    for item in error.errors():
        loc = item.get("loc") or ()
        field = str(loc[0]) if loc else ""
        name = called.get(field, field)
        parts.append(f"{name}: {_words(item)}" if name else _words(item))
    return "; ".join(dict.fromkeys(parts))
