"""The host aliases in ~/.ssh/config, for the add-host dialog's picker (as VS Code's Remote Explorer offers).

Only plain aliases count: a `Host` pattern with `*`, `?` or `!` names no one machine. `Include`d files are
followed (relative to ~/.ssh, globs allowed), at most `MAX_DEPTH` deep; unreadable files, and anything
that is not a regular file (a FIFO would freeze the dialog), are skipped.

An entry whose ProxyCommand is a platform's own stdio tunnel (`coder ssh --stdio`, `gh codespace ssh --stdio`:
a provider row's `stdio_command`) is offered as a box of that provider, with the reason (`PickerEntry.why`); a
platform's wildcard block (`Host coder.*`, written by `coder config-ssh`) names no box, so it only says which
prefix the platform's own list should be shown with.
"""

from __future__ import annotations

import glob
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from workroom.core.provider_specs import PROVIDER_SPECS, ProviderSpec
from workroom.regular_file import read_regular_file

MAX_DEPTH = 5
NAME_FLAGS = ("-c", "--codespace")
PREFIX_FLAGS = ("--ssh-host-prefix",)
SUFFIX_FLAGS = ("--hostname-suffix", "--ssh-hostname-suffix")


def default_config() -> Path:
    return Path(os.path.expanduser("~/.ssh/config"))


@dataclass(frozen=True)
class PickerEntry:
    """One choice in the add-host picker."""

    label: str
    name: str
    """The host name it suggests."""
    alias: str | None = None
    """The ~/.ssh/config alias (a plain SSH entry), or None."""
    provider: str | None = None
    """The platform provider it is offered as, or None (plain SSH)."""
    reference: dict[str, str] = field(default_factory=dict)
    user: str | None = None
    why: str = ""


@dataclass
class ConfigScan:
    entries: list[PickerEntry] = field(default_factory=list)
    prefixes: dict[str, str] = field(default_factory=dict)
    """Per platform provider, the alias prefix of its wildcard block ("coder."), for the boxes its list names."""


def config_aliases(path: Path | None = None) -> list[str]:
    """Every plain alias, in file order, each once."""
    return [e.alias for e in scan_config(path).entries if e.alias is not None and e.provider is None]


def stdio_platform(proxy_command: str) -> ProviderSpec | None:
    """The provider whose own stdio tunnel this ProxyCommand runs, or None."""
    try:
        words = shlex.split(proxy_command)
    except ValueError:
        return None
    if not words:
        return None
    program = os.path.basename(words[0]).removesuffix(".exe")
    for spec in PROVIDER_SPECS.values():
        if spec.stdio_command and program == spec.stdio_command[0] and all(w in words for w in spec.stdio_command[1:]):
            return spec
    return None


def box_name(proxy_command: str, alias: str) -> str | None:
    """The workspace or codespace a platform ProxyCommand reaches for `alias` (None: a wildcard's `%h` it cannot
    resolve without an alias of its pattern)."""
    words = shlex.split(proxy_command)
    for i, word in enumerate(words[:-1]):
        nxt = words[i + 1]
        if word in NAME_FLAGS:
            return nxt
        if word in PREFIX_FLAGS and "%h" in words:
            return alias[len(nxt):] if alias.startswith(nxt) and len(alias) > len(nxt) else None
        if word in SUFFIX_FLAGS and "%h" in words:
            return alias[:-len(nxt) - 1] if alias.endswith("." + nxt) else None
    last = words[-1]
    return None if last.startswith("-") or "%" in last else last


def _prefix(proxy_command: str) -> str | None:
    words = shlex.split(proxy_command)
    return next((words[i + 1] for i, w in enumerate(words[:-1]) if w in PREFIX_FLAGS), None)


def scan_config(path: Path | None = None, _depth: int = 0, _scan: ConfigScan | None = None) -> ConfigScan:
    """Every entry the picker can offer, in file order, each alias once."""
    scan = _scan if _scan is not None else ConfigScan()
    path = path or default_config()
    try:
        # Read on the GUI thread when the add-host dialog opens: a FIFO here must not freeze the window.
        lines = read_regular_file(path, None).decode("utf-8", errors="replace").splitlines()
    except OSError:
        return scan
    blocks: list[tuple[list[str], dict[str, str]]] = []
    current: tuple[list[str], dict[str, str]] | None = None
    for line in lines:
        words = line.strip().replace("=", " ", 1).split(None, 1)
        if not words or words[0].startswith("#"):
            continue
        key, value = words[0].lower(), (words[1].strip() if len(words) > 1 else "")
        if key == "host":
            current = (value.split(), {})
            blocks.append(current)
        elif key == "match":
            current = None
        elif key == "include" and _depth < MAX_DEPTH:
            _flush(blocks, scan)
            blocks = []
            for pattern in value.split():
                full = os.path.expanduser(pattern)
                if not os.path.isabs(full):
                    full = str(path.parent / full)
                for included in sorted(glob.glob(full)):
                    scan_config(Path(included), _depth + 1, scan)
        elif current is not None and key in ("proxycommand", "user"):
            current[1].setdefault(key, value)  # the first value obtained wins
    _flush(blocks, scan)
    return scan


def _flush(blocks: list[tuple[list[str], dict[str, str]]], scan: ConfigScan) -> None:
    seen = {e.alias for e in scan.entries}
    for patterns, options in blocks:
        proxy = options.get("proxycommand", "")
        spec = stdio_platform(proxy) if proxy else None
        for pattern in patterns:
            wildcard = any(ch in pattern for ch in "*?!")
            if spec is not None and wildcard:
                prefix = _prefix(proxy)
                if prefix is not None and pattern == prefix + "*":
                    scan.prefixes.setdefault(spec.kind, prefix)
                continue
            if wildcard or pattern in seen:
                continue
            seen.add(pattern)
            name = box_name(proxy, pattern) if spec is not None else None
            if spec is None or name is None:
                scan.entries.append(PickerEntry(label=pattern, name=pattern, alias=pattern))
                continue
            field_name = spec.reference[0].name
            scan.entries.append(PickerEntry(
                label=f"{pattern} — {spec.kind} ({name})", name=name, alias=pattern, provider=spec.kind,
                reference={field_name: name}, user=options.get("user"),
                why=f"Offered as a {spec.kind} host: {spec.picker_why}."))


def platform_entries(kind: str, boxes: list[tuple[str, str]], prefix: str | None) -> list[PickerEntry]:
    """The boxes a platform's own list names (`coder list`, `gh codespace list`), as picker entries."""
    spec = PROVIDER_SPECS[kind]
    field_name = spec.reference[0].name
    return [PickerEntry(label=f"{prefix or ''}{name} — {kind}, {state} (from its list)", name=name, provider=kind,
                        reference={field_name: name},
                        why=f"Offered as a {kind} host: it is in your {spec.stdio_command[0]} CLI's own list, and "
                            f"{spec.picker_why}.")
            for name, state in boxes]
