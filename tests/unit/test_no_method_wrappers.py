"""One call, every layer (docs/architecture.md, "Adding a protocol method"): a face asks
`call(Method.X, **params)`; neither HostSession nor AppController has a method of its own per protocol method
(the wrappers `keep`, `let_sleep`, `timeline`, `exclusions`, `settings` ...), so a new method touches the wire
model, the agent's handler and the face that shows it. Read from the source, as the layering tests read it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from workroom.core.protocol import Method

pytestmark = pytest.mark.unit

APP = Path(__file__).resolve().parents[2] / "app" / "workroom"
CLASSES = {"HostSession": APP / "sessions" / "host_session.py", "AppController": APP / "ui" / "app_controller.py"}


def _methods(path: Path, name: str) -> set[str]:
    tree = ast.parse(path.read_text())
    found = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and node.name == name]
    assert len(found) == 1, f"{name} not found in {path}: the check would check nothing"
    return {item.name for item in found[0].body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)}


@pytest.mark.parametrize("name", list(CLASSES))
def test_no_method_per_protocol_method(name: str) -> None:
    methods = _methods(CLASSES[name], name)
    assert len(methods) > 5
    wrappers = {m.value for m in Method} & {m.lstrip("_") for m in methods}
    assert not wrappers, f"{name} wraps protocol methods {sorted(wrappers)}: ask call(Method.X, ...) instead"


def test_the_check_sees_a_wrapper(tmp_path: Path) -> None:
    source = tmp_path / "host_session.py"
    source.write_text("class HostSession:\n" + "".join(f"    def m{i}(self): ...\n" for i in range(6))
                      + "    async def keep(self): ...\n")
    assert {m.value for m in Method} & _methods(source, "HostSession") == {"keep"}
