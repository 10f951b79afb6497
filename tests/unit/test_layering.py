"""The house rule, held for every layer: ui -> sessions -> remote/providers -> core, and the agent imports
nothing from the app (docs/architecture.md, "Layers").

Every import counts, including ones inside functions and under TYPE_CHECKING: a lazy import is still a
dependency. Top-level modules of `workroom` that are not a layer (paths, storage, credentials, resources,
the agent bundle, the self-test) are shared services: any layer but core may use them, and they use no
layer above remote. `core`'s finer rule (no Qt, no I/O libraries) is tested in tests/unit/core.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app" / "workroom"
AGENT = ROOT / "agent_bundle" / "wr_agent"

LAYERS = ("core", "platform", "remote", "providers", "sessions", "ui", "cli")
SHARED = "shared"  # a top-level module of workroom that is not one of the layers

# What each layer may import from the app. ui may hand over to the headless cli when there is no display.
ALLOWED: dict[str, set[str]] = {
    "core": {"core"},
    "platform": {"platform"},  # what differs per operating system (macOS): uses nothing of the app
    "remote": {"core", "platform", "remote", SHARED},
    "providers": {"core", "platform", "remote", "providers", SHARED},
    "sessions": {"core", "platform", "remote", "providers", "sessions", SHARED},
    "ui": {"core", "platform", "remote", "providers", "sessions", "ui", "cli", SHARED},
    "cli": {"core", "platform", "remote", "providers", "sessions", "cli", SHARED},
    SHARED: {"core", "platform", "remote", SHARED},
}
QT = {"PySide6", "shiboken6", "qasync"}
QT_ALLOWED = {"ui", SHARED}  # resources (icons) and the self-test are the shared modules that touch Qt
PARAMIKO_ALLOWED = {"remote"}
NEVER_IN_THE_APP = {"simbox", "wr_agent", "pytest", "fixtures"}  # dev tools, the agent's own source, tests


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    name: str

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line} imports {self.name}"


def imports_of(path: Path, source: str | None = None) -> Iterator[Import]:
    """Every absolute import in a file, at any depth (relative imports are resolved against the package)."""
    tree = ast.parse(source if source is not None else path.read_text(), str(path))
    package = _module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else _module_name(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(path, node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parent, *([base] if base else [])])
            for alias in node.names:
                # `from workroom import paths` names a module; `from workroom.core.badge import badge` a name in one
                yield Import(path, node.lineno, f"{base}.{alias.name}" if base == "workroom" else base)


def _module_name(path: Path) -> str:
    for top in (APP.parent, AGENT.parent):
        if path.is_relative_to(top):
            return ".".join(path.relative_to(top).with_suffix("").parts)
    return path.stem


def layer_of_module(name: str) -> str | None:
    """The layer of a dotted `workroom.*` name, SHARED for the other top-level modules, None outside."""
    parts = name.split(".")
    if parts[0] != "workroom":
        return None
    if len(parts) == 1 or parts[1].startswith("__"):
        return SHARED
    return parts[1] if parts[1] in LAYERS else SHARED


def layer_of_file(path: Path) -> str:
    name = path.relative_to(APP).parts[0].removesuffix(".py")
    return name if name in LAYERS else SHARED


def violations(path: Path, source: str | None = None) -> list[str]:
    """What in this app file breaks the layer rule, as readable lines."""
    layer = layer_of_file(path)
    found: list[str] = []
    for imp in imports_of(path, source):
        top = imp.name.split(".")[0]
        target = layer_of_module(imp.name)
        if target is not None and target not in ALLOWED[layer]:
            found.append(f"{imp}: {layer} may not use {target}")
        if top in QT and layer not in QT_ALLOWED:
            found.append(f"{imp}: Qt belongs to ui")
        if top == "paramiko" and layer not in PARAMIKO_ALLOWED:
            found.append(f"{imp}: paramiko belongs to remote")
        if top in NEVER_IN_THE_APP:
            found.append(f"{imp}: the app never imports {top}")
    return found


def _app_files(layer: str) -> list[Path]:
    return sorted(p for p in APP.rglob("*.py") if layer_of_file(p) == layer)


@pytest.mark.parametrize("layer", [*LAYERS, SHARED])
def test_each_layer_uses_only_the_layers_below_it(layer: str) -> None:
    files = _app_files(layer)
    assert files, f"no module found for layer {layer}"
    assert [v for path in files for v in violations(path)] == []


def test_the_agent_imports_nothing_but_the_standard_library_and_itself() -> None:
    # _sha2 (3.12+) and _sha256 (3.8-3.11) are CPython's builtin SHA-256, tried before hashlib; the running
    # interpreter lists only its own one.
    stdlib = set(sys.stdlib_module_names) | {"__future__", "_sha2", "_sha256"}
    files = sorted(AGENT.rglob("*.py"))
    assert files
    bad = [str(imp) for path in files for imp in imports_of(path)
           if imp.name.split(".")[0] not in stdlib | {"wr_agent"}]
    assert bad == []


def test_every_module_of_the_app_is_in_some_layer() -> None:
    """No room outside the plan: a new top-level package must be added to LAYERS (and docs/architecture.md)."""
    packages = {p.name for p in APP.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages <= set(LAYERS)


@pytest.mark.parametrize(("layer_file", "source", "expected"), [
    ("core/x.py", "from workroom.sessions import engine", "core may not use sessions"),
    ("core/x.py", "def f():\n    from workroom.remote import agent_link\n", "core may not use remote"),
    ("remote/x.py", "from workroom.providers.base import Provider", "remote may not use providers"),
    ("providers/x.py", "from workroom import sessions", "providers may not use sessions"),
    ("sessions/x.py", "from workroom.ui import tray", "sessions may not use ui"),
    ("sessions/x.py", "from PySide6.QtCore import QObject", "Qt belongs to ui"),
    ("providers/x.py", "import paramiko", "paramiko belongs to remote"),
    ("cli/x.py", "from workroom.ui.main import main", "cli may not use ui"),
    ("app_link.py", "from workroom.cli import serve", "shared may not use cli"),
    ("storage.py", "from workroom.sessions.engine import Engine", "shared may not use sessions"),
    ("ui/x.py", "import simbox", "the app never imports simbox"),
    ("remote/x.py", "from ..sessions import engine", "remote may not use sessions"),
])
def test_the_checker_catches_each_kind_of_breach(layer_file: str, source: str, expected: str) -> None:
    found = violations(APP / layer_file, source)
    assert any(expected in v for v in found), found


def test_the_checker_lets_the_allowed_direction_pass() -> None:
    source = "from workroom.core.badge import badge\nfrom workroom.remote import agent_link\nfrom .. import paths\n"
    assert violations(APP / "sessions" / "x.py", source) == []
