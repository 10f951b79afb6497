"""The platforms' own rules for a box's name, checked before a name reaches their command lines or URLs.

A workspace or codespace name goes into `coder ssh|start|schedule extend NAME` and into `gh api
user/codespaces/NAME/start`: a name like `../..` would reach another REST path, `-x` would be read as a flag. So a
name is held to the platform's naming rule when a host is added or edited and again before every use (a hosts file
edited by hand never gets a name through); the commands put flags first and the name after `--` or inside its flag
(`--codespace=NAME`), and a URL path segment is quoted as well (docs/providers.md, "Names").

* Coder (codersdk's `NameValid`, the rule for user, workspace and agent names alike): letters and digits in runs
  joined by single hyphens, at most 32 characters; a workspace is `[OWNER/]NAME[.AGENT]`.
* Codespaces: GitHub makes the names (`monalisa-fuzzy-space-x5gq7r`): letters and digits joined by single hyphens.
  GitHub documents no rule for them; this one is what its names look like, at most 100 characters, and stricter
  than any path or flag needs.
"""

from __future__ import annotations

import re

_RUNS = re.compile(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*")
CODER_NAME_MAX = 32
CODESPACE_NAME_MAX = 100


def _word_problem(word: str, what: str, limit: int) -> str | None:
    if not word:
        return f"has an empty {what}"
    if len(word) > limit:
        return f"has a {what} longer than {limit} characters"
    if not _RUNS.fullmatch(word):
        return f"has a {what} that is not letters and digits joined by single hyphens"
    return None


def coder_workspace_problem(value: str) -> str | None:
    """Why `value` is not a Coder workspace as `coder` takes it (`[OWNER/]NAME[.AGENT]`), or None."""
    owner, slash, rest = value.partition("/")
    if not slash:
        owner, rest = "", value
    elif "/" in rest:
        return "has more than one '/' (it is OWNER/NAME)"
    name, dot, agent = rest.partition(".")
    if dot and "." in agent:
        return "has more than one '.' (it is NAME.AGENT)"
    for word, what, given in ((owner, "owner", bool(slash)), (name, "name", True), (agent, "agent name", bool(dot))):
        if given:
            problem = _word_problem(word, what, CODER_NAME_MAX)
            if problem is not None:
                return problem
    return None


def codespace_problem(value: str) -> str | None:
    """Why `value` is not a codespace name as GitHub makes them, or None."""
    return _word_problem(value, "name", CODESPACE_NAME_MAX)
