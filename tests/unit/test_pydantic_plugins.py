"""The app looks for no pydantic plugins (workroom.pydantic_plugins): its models build and validate as before, and
importlib.metadata (the entry-point scan of every installed distribution) is never loaded; and pydantic asks its
plugin loader for nothing but `get_plugins`, so the stand-in is all it needs (a pydantic that asks for more fails
here, not in a user's command)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

CHILD = """
import json, sys
from workroom.pydantic_plugins import skip_pydantic_plugins
skip_pydantic_plugins()
from workroom.core.hosts import Host, HostsFile
from workroom.core.protocol import parse_line
hosts = HostsFile(hosts=(Host(name="box", provider="ssh", address="10.0.0.1", port=22),))
assert HostsFile.model_validate_json(hosts.model_dump_json()) == hosts
try:
    Host(name="box", provider="ssh", port=70000)
except ValueError:
    refused = True
print(json.dumps({"refused": refused, "metadata": "importlib.metadata" in sys.modules,
                  "email": "email" in sys.modules}))
"""


def test_models_work_and_no_distribution_is_scanned() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == {"refused": True, "metadata": False, "email": False}


def test_pydantic_asks_its_plugin_loader_only_for_get_plugins() -> None:
    import pydantic

    root = Path(pydantic.__file__).parent
    asked = set()
    for source in root.rglob("*.py"):
        for names in re.findall(r"from \.{1,2}(?:plugin\.)?_loader import ([^\n]+)", source.read_text()):
            asked |= {n.strip() for n in names.split(",")}
        assert "plugin._loader" not in source.read_text().replace("from ._loader", "") or source.name == "_loader.py"
    assert asked == {"get_plugins"}
