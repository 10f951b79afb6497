"""ssh_config read the way OpenSSH's client reads it, for one host: the options that apply, first value wins.

paramiko's own parser ignores `Include`, lets a later `ProxyJump` beat an earlier `ProxyCommand`, and has
no final pass; a user whose `ssh alias` works expects the same alias to work here. This module follows
OpenSSH 9's `readconf.c` semantics (see docs/providers.md, "ssh_config keywords"):

- keywords are case-insensitive, `Key value`, `Key=value` and `Key = value` all work, arguments may be
  quoted, and a `#` starts a comment;
- for most keywords the first value obtained wins; `IdentityFile` and `CertificateFile` accumulate;
- `Host` patterns (`*`, `?`, `!negation`) and `Match` criteria (`all`, `host`, `originalhost`, `user`,
  `localuser`, `exec`, `canonical`, `final`, each negatable) select the lines that apply;
- `Include` (relative to ~/.ssh for the user's file, `~`, absolute, globs, nested up to 16 deep) reads
  files in place, active only where the `Include` line itself is; `Host`/`Match` inside a file included
  from an inactive block never match;
- when a `Match final`/`canonical` was seen or `CanonicalizeHostname` is on, the files are read a
  second time against the resolved host name, as OpenSSH's final pass does.

No network here; `Match exec` runs its command through the shell, exactly as ssh would.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from workroom.core.errors import UserError
from workroom.core.ssh_names import SshNameKind, ssh_name_problem
from workroom.regular_file import NotARegularFileError, read_regular_file

MAX_INCLUDE_DEPTH = 16
EXEC_TIMEOUT_SECONDS = 10.0
# Keywords whose every occurrence adds to a list instead of "first wins".
ACCUMULATING = frozenset({"identityfile", "certificatefile", "localforward", "remoteforward",
                          "dynamicforward", "sendenv", "setenv"})
# Match criteria of newer OpenSSH releases than the one we follow; a block using one never applies.
NEWER_MATCH_CRITERIA = frozenset({"localnetwork", "tagged", "version", "sessiontype", "command"})
# Keywords whose value is the rest of the line, as a shell command (never split or unquoted).
RAW_LINE = frozenset({"proxycommand", "remotecommand", "localcommand", "knownhostscommand"})
# Keywords that never reach the option table (they steer parsing itself).
STRUCTURAL = frozenset({"host", "match", "include"})


class SshConfigFileError(UserError):
    """An ssh_config file cannot be read or has a line ssh itself would refuse."""

    def __init__(self, message: str, hint: str = "Fix ~/.ssh/config (ssh -G <host> shows how ssh reads it).") -> None:
        super().__init__("SSH configuration problem", message, hint)


@dataclass
class HostOptions:
    """The options that apply to one host: keyword (lower case) -> argument list, first value wins.

    Accumulating keywords hold every value in order (duplicates dropped). Of ProxyCommand and
    ProxyJump only the one obtained first is kept.
    """

    values: dict[str, list[str]] = field(default_factory=dict)
    lists: dict[str, list[str]] = field(default_factory=dict)

    def first(self, keyword: str) -> str | None:
        args = self.values.get(keyword)
        return " ".join(args) if args else None

    def args(self, keyword: str) -> list[str] | None:
        return self.values.get(keyword)

    def many(self, keyword: str) -> list[str]:
        return list(self.lists.get(keyword, []))

    def take(self, keyword: str, args: list[str], raw: str) -> None:
        if keyword in ACCUMULATING:
            bucket = self.lists.setdefault(keyword, [])
            value = raw if keyword in ("identityfile", "certificatefile") else " ".join(args)
            if value not in bucket:
                bucket.append(value)
            return
        if keyword in ("proxycommand", "proxyjump"):
            # One of the two, whichever is obtained first. `ProxyCommand none` blocks a later ProxyJump;
            # `ProxyJump none` blocks later ProxyJumps but not a later ProxyCommand (as OpenSSH 9 does).
            jump = self.values.get("proxyjump")
            if keyword in self.values or "proxycommand" in self.values:
                return
            if keyword == "proxycommand" and jump is not None and jump[0].lower() != "none":
                return
            self.values[keyword] = [raw] if keyword == "proxycommand" else args
            return
        if keyword not in self.values:
            self.values[keyword] = args


@dataclass(frozen=True)
class LookupContext:
    """Who is asking: the host as typed, the user as typed (if any), and the local user's facts."""

    original_host: str
    typed_user: str | None
    local_user: str
    home: Path


def split_args(text: str) -> list[str]:
    """Split a config line the way ssh's argv_split does: whitespace, "double"/'single' quotes,
    backslash escapes of quotes and backslash, and a `#` that starts a word ends the line."""
    args: list[str] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t":
            i += 1
        if i >= n:
            break
        if text[i] == "#":
            break
        word: list[str] = []
        quote: str | None = None
        while i < n:
            c = text[i]
            if quote is None and c in " \t":
                break
            if c == "\\" and i + 1 < n and text[i + 1] in "\\\"' " and quote != "'":
                word.append(text[i + 1])
                i += 2
                continue
            if quote is None and c in "\"'":
                quote = c
            elif c == quote:
                quote = None
            else:
                word.append(c)
            i += 1
        if quote is not None:
            raise SshConfigFileError(f"Unbalanced quote in {text!r}.")
        args.append("".join(word))
    return args


def split_keyword(line: str) -> tuple[str, str] | None:
    """`Key value`, `Key=value`, `Key = value` -> ("key", "value"); None for blank and comment lines."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    cut = len(stripped)
    for index, char in enumerate(stripped):
        if char in " \t=":
            cut = index
            break
    keyword, rest = stripped[:cut], stripped[cut:].lstrip(" \t")
    if rest.startswith("="):
        rest = rest[1:].lstrip(" \t")
    return keyword.lower(), rest


def match_pattern(name: str, pattern: str) -> bool:
    """OpenSSH's match_pattern: `*` and `?` wildcards only, case-sensitive, whole string."""
    return fnmatch.fnmatchcase(name, pattern.replace("[", "[[]"))


def match_pattern_list(name: str, patterns: str, *, fold_case: bool = False) -> bool:
    """A comma list with `!negation`: any negated match refuses, otherwise any positive match accepts."""
    if fold_case:
        name = name.lower()
    matched = False
    for pattern in patterns.split(","):
        pattern = pattern.strip()
        negated = pattern.startswith("!")
        if negated:
            pattern = pattern[1:]
        if fold_case:
            pattern = pattern.lower()
        if match_pattern(name, pattern):
            if negated:
                return False
            matched = True
    return matched


class ConfigReader:
    """Reads ssh_config files for one lookup (one pass), filling a `HostOptions`."""

    def __init__(self, context: LookupContext, options: HostOptions, *, host: str, final: bool,
                 run_exec: Callable[[str], bool]) -> None:
        self.context = context
        self.options = options
        self.host = host  # what Host lines match: the typed host, or the resolved name in the final pass
        self.final = final
        self.run_exec = run_exec
        self.want_final = False

    def read_file(self, path: Path, *, user_config: bool, active: bool = True, never_match: bool = False,
                  depth: int = 0) -> bool:
        """Read one file; returns the activity state at its end (the caller restores its own)."""
        if depth > MAX_INCLUDE_DEPTH:
            raise SshConfigFileError(f"{path}: Include nested too deep (more than {MAX_INCLUDE_DEPTH}).")
        try:
            text = read_regular_file(path, None).decode("utf-8")
        except FileNotFoundError:
            return active
        except NotARegularFileError as exc:
            # OpenSSH itself opens it and waits for a writer for ever (`ssh -G -F <fifo>` hangs); we refuse.
            raise SshConfigFileError(f"{path} is not a regular file (a FIFO, device or socket is in its place).",
                                     "Replace it with a regular file or remove it, then try again.") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise SshConfigFileError(f"Could not read {path}: {exc}.",
                                     "Fix the file or move it aside, then try again.") from exc
        for number, line in enumerate(text.splitlines(), start=1):
            active = self._line(line, path, number, active=active, user_config=user_config,
                                never_match=never_match, depth=depth)
        return active

    def _line(self, line: str, path: Path, number: int, *, active: bool, user_config: bool,
              never_match: bool, depth: int) -> bool:
        parsed = split_keyword(line)
        if parsed is None:
            return active
        keyword, rest = parsed
        where = f"{path} line {number}"
        if keyword == "host":
            return not never_match and self._host_matches(split_args(rest))
        if keyword == "match":
            matched = self._match_matches(split_args(rest), where)
            return not never_match and matched
        if keyword == "include":
            for included in self._include_paths(split_args(rest), user_config, where):
                self.read_file(included, user_config=user_config, active=active,
                               never_match=never_match or not active, depth=depth + 1)
            return active  # an included file's Host/Match lines never leak out of it
        if active:
            raw = rest.strip()
            args = split_args(rest) if keyword not in RAW_LINE else [raw]
            if keyword not in RAW_LINE and not args:
                raise SshConfigFileError(f"{where}: {keyword} has no value.")
            self.options.take(keyword, args, args[0] if keyword in ("identityfile", "certificatefile") else raw)
        return active

    def _host_matches(self, patterns: list[str]) -> bool:
        matched = False
        for pattern in patterns:
            negated = pattern.startswith("!")
            if negated:
                if match_pattern(self.host, pattern[1:]):
                    return False
            elif match_pattern(self.host, pattern):
                matched = True
        return matched

    def _match_matches(self, args: list[str], where: str) -> bool:
        result = True
        criteria = iter(args)
        seen_any = False
        for raw in criteria:
            seen_any = True
            negate = raw.startswith("!")
            name = raw[1:].lower() if negate else raw.lower()
            if name == "all":
                this = True
            elif name == "canonical" or name == "final":
                if name == "final":
                    self.want_final = True
                this = self.final
            elif name in ("host", "originalhost", "user", "localuser", "exec"):
                value = next(criteria, None)
                if value is None:
                    raise SshConfigFileError(f"{where}: Match {name} needs an argument.")
                if not result:  # like ssh: once false, later criteria are not evaluated (exec not run)
                    continue
                this = self._criterion(name, value)
            elif name in NEWER_MATCH_CRITERIA:
                # Newer OpenSSH releases (localnetwork, tagged, version...): we cannot judge them, so the
                # block never applies (with a value to skip). Refusing the whole file would be worse.
                next(criteria, None)
                this = negate
                result = False
            else:
                raise SshConfigFileError(f"{where}: unsupported Match criterion {raw!r}.")
            if this == negate:
                result = False
        if not seen_any:
            raise SshConfigFileError(f"{where}: Match needs at least one criterion.")
        return result

    def _criterion(self, name: str, value: str) -> bool:
        if name == "host":
            return match_pattern_list(self.match_host(), value, fold_case=True)
        if name == "originalhost":
            return match_pattern_list(self.context.original_host, value, fold_case=True)
        if name == "user":
            return match_pattern_list(self.current_user(), value)
        if name == "localuser":
            return match_pattern_list(self.context.local_user, value)
        return self.run_exec(value)

    def match_host(self) -> str:
        hostname = self.options.first("hostname")
        return checked_hostname(expand_hostname(hostname, self.host)) if hostname else self.host

    def current_user(self) -> str:
        return self.context.typed_user or self.options.first("user") or self.context.local_user

    def _include_paths(self, args: list[str], user_config: bool, where: str) -> Iterator[Path]:
        if not args:
            raise SshConfigFileError(f"{where}: Include names no file.")
        for arg in args:
            if arg.startswith("~"):
                if not user_config:
                    raise SshConfigFileError(f"{where}: a system file may not Include {arg!r} (it starts with ~).")
                pattern = str(self.context.home) + arg[1:] if arg.startswith("~/") or arg == "~" \
                    else os.path.expanduser(arg)
            elif arg.startswith("/"):
                pattern = arg
            else:
                base = self.context.home / ".ssh" if user_config else Path("/etc/ssh")
                pattern = str(base / arg)
            for match in sorted(glob.glob(pattern)):
                yield Path(match)


def checked_hostname(hostname: str) -> str:
    """A HostName from the config, refused (SshConfigFileError) where ssh would refuse it typed: it becomes
    `%h` in `Match exec` and `ProxyCommand`, which a shell runs. (ssh itself trusts the config's HostName;
    no real host's name or address has these characters, so the app refuses it, the one place it is stricter.)"""
    why = ssh_name_problem(SshNameKind.HOST, hostname)
    if why is not None:
        raise SshConfigFileError(f"The SSH configuration gives the HostName {hostname!r}, which {why}.",
                                 "Fix the HostName line in ~/.ssh/config (ssh -G <host> shows what ssh reads).")
    return hostname


def expand_hostname(hostname: str, host: str) -> str:
    """HostName accepts only %h (the host as typed) and %%."""
    return expand_tokens(hostname, {"h": host})


def expand_tokens(text: str, tokens: dict[str, str]) -> str:
    """OpenSSH percent_expand: %x from `tokens`, %% a percent; an unknown token is an error."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(text):
            raise SshConfigFileError(f"{text!r} ends with a lone %.")
        token = text[i + 1]
        if token == "%":
            out.append("%")
        elif token in tokens:
            out.append(tokens[token])
        else:
            raise SshConfigFileError(f"{text!r} uses the unknown token %{token}.")
        i += 2
    return "".join(out)


def lookup(
    context: LookupContext,
    files: list[tuple[Path, bool]],
    *,
    run_exec: Callable[[str, ConfigReader], bool] | None = None,
) -> HostOptions:
    """The options for `context.original_host` from `files` ((path, is_user_config) in order).

    Runs OpenSSH's final pass when the first pass asked for one (Match final/canonical, or
    CanonicalizeHostname yes/always); Host lines then match against the resolved host name.
    """
    options = HostOptions()
    host = context.original_host  # Host lines match the name as typed; the result is lower-cased

    def one_pass(match_host: str, final: bool) -> bool:
        reader = ConfigReader(context, options, host=match_host, final=final, run_exec=lambda cmd: False)
        if run_exec is not None:  # `Match exec` tokens need the reader's current answers
            reader.run_exec = lambda cmd: run_exec(cmd, reader)
        for path, user_config in files:
            reader.read_file(path, user_config=user_config)
        return reader.want_final

    want_final = one_pass(host, False)
    hostname = options.first("hostname")
    resolved = checked_hostname((expand_hostname(hostname, host) if hostname else host).lower())
    options.values["hostname"] = [resolved]
    canonicalize = (options.first("canonicalizehostname") or "no").lower() in ("yes", "always")
    if want_final or canonicalize:
        one_pass(resolved, True)
    return options


def shell_exec_matcher(tokens_for: Callable[[ConfigReader], dict[str, str]]) -> Callable[[str, ConfigReader], bool]:
    """`Match exec`: run the (token-expanded) command with the user's shell; exit 0 means a match."""
    def run(command: str, reader: ConfigReader) -> bool:
        expanded = expand_tokens(command, tokens_for(reader))
        shell = os.environ.get("SHELL") or "/bin/sh"
        try:
            done = subprocess.run([shell, "-c", expanded], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, timeout=EXEC_TIMEOUT_SECONDS, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return done.returncode == 0
    return run
