"""At its default size nothing in the detail panel or a dialog is cut off: every label shows all its
(wrapped) text, every button its whole caption, every placeholder fits its field, and nothing runs past the
panel's right edge (the panel never scrolls sideways)."""

from __future__ import annotations

from typing import Any

import pytest
from demo_states import every_state
from gui_helpers import feed
from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QAbstractButton, QLabel, QLineEdit, QScrollArea, QWidget
from workroom.core.errors import ErrorInfo
from workroom.core.provider_specs import PROVIDER_SPECS
from workroom.ui.host_detail_view import MIN_WIDTH
from workroom.ui.host_dialog import AddHostDialog

pytestmark = pytest.mark.gui


def clipped(top: QWidget, area: QWidget | None = None, *, scrolls_down: bool = False) -> list[str]:
    """Every visible label, button or field under `top` whose content does not fit (in words). With
    `scrolls_down` the area may be taller than its view (it scrolls vertically), never wider."""
    area = area or top
    bounds = QRect(QPoint(0, 0), area.size())
    if scrolls_down:
        bounds.setHeight(10**6)
    problems: list[str] = []
    for widget in top.findChildren(QWidget):
        if not widget.isVisibleTo(top) or widget.width() <= 0:
            continue
        name = widget.objectName() or type(widget).__name__
        if isinstance(widget, (QLabel, QAbstractButton, QLineEdit)):
            rect = QRect(widget.mapTo(area, QPoint(0, 0)), widget.size())
            if not bounds.contains(rect):
                problems.append(f"{name}: {rect} runs past {bounds}")
        if isinstance(widget, QLabel) and widget.text():
            if widget.wordWrap():
                need = widget.heightForWidth(widget.width())
                if need > widget.height() + 1:
                    problems.append(f"{name}: needs {need} px high, has {widget.height()}")
            elif widget.sizeHint().width() > widget.width() + 1:
                problems.append(f"{name}: needs {widget.sizeHint().width()} px wide, has {widget.width()}")
        elif isinstance(widget, QAbstractButton) and widget.text():
            if widget.sizeHint().width() > widget.width() + 1:
                problems.append(f"{name} {widget.text()!r}: needs {widget.sizeHint().width()} px, has {widget.width()}")
        elif isinstance(widget, QLineEdit) and widget.placeholderText():
            room = widget.width() - 12  # the frame and text margins of the common styles
            need = widget.fontMetrics().horizontalAdvance(widget.placeholderText())
            if need > room:
                problems.append(f"{name} placeholder: needs {need} px, has {room}")
    return problems


def test_detail_panel_shows_every_state_whole_at_the_default_size(window: Any, engine: Any, qtbot: Any) -> None:
    states = every_state()
    long_error = ErrorInfo(title="Lost the host", message="ConnectionError: The stream `python3 -m wr_agent relay "
                           "--socket /home/someone/.local/state/workroom/agent.sock` ended without exit status.",
                           hint="The app reconnects on its own when the host is reachable again.")
    states["offline"] = states["offline"].__class__(
        states["offline"].host, states["offline"].traits,
        states["offline"].connection.model_copy(update={"error": long_error}), None, None)
    for snap in states.values():
        feed(engine, snap)
    qtbot.wait(20)
    scroll: QScrollArea = window.detail_scroll
    assert scroll.width() >= MIN_WIDTH
    for key, snap in states.items():
        window.select_host(snap.host.name)
        qtbot.wait(10)
        detail = window.detail
        assert scroll.horizontalScrollBar().maximum() == 0 or not scroll.horizontalScrollBar().isVisible(), key
        problems = clipped(detail, scroll.viewport(), scrolls_down=True)
        assert not problems, f"{key}: {problems}"
        assert "ConnectionError" not in detail.error.text()
        primary = detail.primary_button()
        if key in ("offline", "login_refused", "asleep", "unknown", "busy_not_kept_awake", "asking"):
            assert primary is not None, key
    window.select_host("build-box")
    window.detail.details_button.click()
    qtbot.wait(10)
    assert "ConnectionError" in window.detail.error_details.text()  # the whole text, on request
    assert not clipped(window.detail, scroll.viewport(), scrolls_down=True)


@pytest.mark.parametrize("provider", list(PROVIDER_SPECS))
def test_add_host_dialog_shows_placeholders_help_and_errors_whole(provider: str, engine: Any, qtbot: Any) -> None:
    dialog = AddHostDialog(engine.hosts)
    qtbot.addWidget(dialog)
    dialog.select_provider(provider)  # type: ignore[union-attr]
    dialog.inputs["name"].setText("gpu/box")  # type: ignore[union-attr]
    dialog.inputs["port"].setText("70000")  # type: ignore[union-attr]
    dialog.inputs["address"].setText("gpu box")  # type: ignore[union-attr]
    dialog.show()
    dialog.try_accept()
    qtbot.wait(20)
    assert any(label.isVisible() for label in dialog.errors.values())
    assert not clipped(dialog), clipped(dialog)
    for label in dialog.ref_help.values():  # a command is shown as code, never between literal backticks
        if label.isVisible():
            from PySide6.QtGui import QTextDocument

            shown = QTextDocument()
            shown.setHtml(label.text())
            assert "`" not in shown.toPlainText(), shown.toPlainText()


def test_host_table_shows_every_column_whole_at_the_default_size(window: Any, engine: Any, qtbot: Any) -> None:
    """Next to the detail panel, at the window's default size, the host table shows every column: no header
    runs past the table's right edge or is narrower than its caption, and the table never scrolls sideways."""
    from workroom.ui.host_table_model import HEADERS, Column

    for snap in every_state().values():
        feed(engine, snap)
    window.select_host("ci-runner")
    qtbot.wait(20)
    assert not window.geometry_restored
    header = window.table.horizontalHeader()
    room = header.viewport().width()
    problems = []
    for column, caption in HEADERS.items():
        left, width = header.sectionViewportPosition(column), header.sectionSize(column)
        if left < 0 or left + width > room:
            problems.append(f"{caption!r}: spans {left}..{left + width}, the table shows 0..{room}")
        elif width < header.sectionSizeHint(column):
            problems.append(f"{caption!r}: needs {header.sectionSizeHint(column)} px, has {width}")
    assert not problems, problems
    assert header.length() <= room
    for column in (Column.PROVIDER, Column.BADGE, Column.BUSY_FOR):  # short words: shown whole, never elided
        assert window.table.sizeHintForColumn(column) <= header.sectionSize(column), HEADERS[column]
    # State keeps no spare room "Busy because" could use (it was cut while State had ~85 px to spare).
    from workroom.ui.main_window import STATE_WIDTH_STEP

    spare = header.sectionSize(Column.BADGE) - window.table.sizeHintForColumn(Column.BADGE)
    assert spare < STATE_WIDTH_STEP + 20, spare
    from workroom.core.busy_reasons import parse_text, row_words

    parsed = parse_text("cpu: cc1plus (pid 4121)")
    reason = row_words(parsed) if parsed is not None else None
    assert reason == "compiling: cc1plus"
    needed = window.table.fontMetrics().horizontalAdvance(reason) + 16
    assert header.sectionSize(Column.BUSY) >= needed, (header.sectionSize(Column.BUSY), needed)
    bar = window.table.horizontalScrollBar()
    assert bar.maximum() == 0 or not bar.isVisible()


def test_a_long_state_never_squeezes_the_busy_because_caption(window: Any, engine: Any, qtbot: Any) -> None:
    """A state cell with a long note ("Idle · … · agent replaced at 14:02"): State grows, but never into the room
    "Busy because" needs for its caption (it was cut to "usy becaus"); past that its cells elide, and no column
    runs past the table's edge."""
    import time

    from demo_states import make_snapshot
    from workroom.core.connection import AgentReplaced
    from workroom.ui.host_table_model import HEADERS, Column

    for snap in every_state().values():
        feed(engine, snap)
    long = make_snapshot("replaced-box", "boxd", idle_window_seconds=60.0)
    replaced = AgentReplaced(at_clock="14:02", at_monotonic=time.monotonic(), why="stopped answering")
    feed(engine, type(long)(long.host, long.traits, long.connection.model_copy(update={"agent_replaced": replaced}),
                            long.status, None, long.status_received_at))
    qtbot.wait(20)
    header = window.table.horizontalHeader()
    assert header.sectionSize(Column.BUSY) >= header.sectionSizeHint(Column.BUSY), HEADERS[Column.BUSY]
    assert header.length() <= header.viewport().width()
    window.resize(window.width() + 400, window.height())  # wider: State may take the room it wants
    qtbot.wait(20)
    assert header.sectionSize(Column.BUSY) >= header.sectionSizeHint(Column.BUSY)
