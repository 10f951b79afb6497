"""The ui modules show text only through ui/plain_widgets.py: a label made anywhere else holds the app's own
fixed words, a tooltip set anywhere else is a fixed sentence, and no module but plain_widgets builds a message
box, shows a tooltip or escapes markup itself (docs/ui.md, "Text is never markup")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

UI = Path(__file__).resolve().parents[2] / "app" / "workroom" / "ui"
HELPER = UI / "plain_widgets.py"


def _fixed(node: ast.expr) -> bool:
    """The app's own words: a string literal, or a module constant (UPPER_CASE)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    return isinstance(node, ast.Name) and node.id.isupper()


def _called(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def problems(source: str, where: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
            if "html" in names:
                found.append(f"{where}:{node.lineno}: imports html (escape with plain_widgets.escape/markup)")
        if not isinstance(node, ast.Call):
            continue
        name = _called(node)
        fixed = len(node.args) == 1 and not node.keywords and _fixed(node.args[0])
        if name == "QLabel" and not fixed:
            found.append(f"{where}:{node.lineno}: QLabel(...) of words not fixed: use plain_label or rich_label")
        elif name == "setToolTip" and not fixed:
            found.append(f"{where}:{node.lineno}: setToolTip of words not fixed: use set_tooltip")
        elif name == "QMessageBox":
            found.append(f"{where}:{node.lineno}: QMessageBox(...): use message_box")
        elif name in ("showText", "setInformativeText", "convertFromPlainText"):
            found.append(f"{where}:{node.lineno}: {name}(...): use plain_widgets' helpers")
    return found


def test_every_ui_module_shows_text_through_the_one_helper() -> None:
    found = []
    for path in sorted(UI.glob("*.py")):
        if path != HELPER:
            found += problems(path.read_text(), path.name)
    assert not found, "\n".join(found)


def test_the_check_sees_each_way_around_the_helper() -> None:
    bad = """
import html
from PySide6.QtWidgets import QLabel, QMessageBox, QToolTip
a = QLabel(name)
b = QLabel()
c = QLabel(f"{x}")
w.setToolTip(text)
QMessageBox(1, "t", text)
QToolTip.showText(p, text, w)
box.setInformativeText(text)
"""
    assert len(problems(bad, "bad")) == 8
    good = 'a = QLabel("Provider price:")\nw.setToolTip("A fixed sentence.")\nw.setToolTip(STARTING_TOOLTIP)\n'
    assert problems(good, "good") == []


def test_code_text_shows_backticked_commands_as_code_and_escapes_the_rest() -> None:
    from workroom.ui.plain_widgets import code_text

    assert code_text("as `boxd machine list` shows it") == "as <code>boxd machine list</code> shows it"
    assert code_text("`<img src=/dev/zero>` & `a`") == "<code>&lt;img src=/dev/zero&gt;</code> &amp; <code>a</code>"
    assert code_text("one ` alone <b>") == "one ` alone &lt;b&gt;"  # an odd backtick stays, escaped text
