"""The app uses no pydantic plugins, and does not look for any.

pydantic looks for plugins (entry points of the group "pydantic" in every installed distribution) when it builds
its first model: it imports importlib.metadata (with email, zipfile and csv) and reads every distribution's
metadata. That was ~30-50 ms of each `workroom` command's start and of the app's engine load, for plugins the app
has none of and wants none of (a plugin in the user's Python would change how every model validates).
`skip_pydantic_plugins()`, called before pydantic is first imported, puts pydantic's own answer for "plugins
disabled" (`get_plugins()` is empty) in place of its plugin loader, and sets PYDANTIC_DISABLE_PLUGINS so a real
loader would answer the same. tests/unit/test_pydantic_plugins.py holds that pydantic asks the loader for nothing
else.
"""

from __future__ import annotations

import os
import sys
import types

LOADER = "pydantic.plugin._loader"


def skip_pydantic_plugins() -> None:
    if "pydantic" in sys.modules or LOADER in sys.modules:
        return  # too late, or done: pydantic has (or will have) what it already chose
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    loader = types.ModuleType(LOADER, "pydantic's plugin loader, with no plugins (workroom.pydantic_plugins)")
    loader.get_plugins = lambda: ()  # type: ignore[attr-defined]
    sys.modules[LOADER] = loader
