"""The window: prompt cards on top, the host list and its detail panel, and the settings pane.

Everything here renders what the controller hands over and calls the controller's verbs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QItemSelectionModel, QModelIndex, QPoint, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QHideEvent, QKeySequence, QResizeEvent, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QMainWindow,
    QMenu,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSplitter,
    QStyle,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workroom.core.badge import LABELS
from workroom.core.connection import CONNECT_WORDS, ConnectAction
from workroom.core.errors import Face, UserError
from workroom.core.exception_names import without_exception_names
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.hosts import Host
from workroom.core.prompt_answers import AnswerFace
from workroom.core.protocol import Method
from workroom.core.setting_rows import Store
from workroom.platform.login_item import LoginItem, LoginItemState
from workroom.this_computer import ThisComputer
from workroom.ui import row_text, styles
from workroom.ui.app_controller import AppController
from workroom.ui.breakable_words import breakable, install_clipboard_cleaner
from workroom.ui.host_detail_view import HostDetailView
from workroom.ui.host_table_model import Column, HostTableModel
from workroom.ui.login_item_offer import LoginItemOffer
from workroom.ui.plain_widgets import markup, message_box, plain_label, rich_label
from workroom.ui.prompt_cards_view import PromptCardsView
from workroom.ui.settings_view import SettingsView
from workroom.ui.timeline_view import TimelineView
from workroom.ui.tray import copy_to_clipboard as copy_text

if TYPE_CHECKING:  # the dialogs load when one opens, not at start-up (docs/architecture.md)
    from workroom.core.questions import HostKeyQuestion, SecretRequest
    from workroom.ui.host_dialog import AddHostDialog

HOSTS_TAB, SETTINGS_TAB = 0, 1
STATE_WIDTH_STEP = 24
"""The State column's width moves in steps of this many pixels (an age ticking from 9 to 10 min does not)."""


class MainWindow(QMainWindow):
    quit_requested = Signal()
    """⌘/Ctrl+Q: the app quits (not only this window)."""

    def __init__(self, controller: AppController, *, login_item: LoginItem | None = None,
                 can_hold_idle_sleep: bool = False) -> None:
        """`login_item`: how this computer opens the app at login (None: not offered); `can_hold_idle_sleep`:
        this computer can hold off its idle sleep (a Mac): the setting can be changed."""
        super().__init__()
        styles.install()
        install_clipboard_cleaner()
        self.controller = controller
        self.hide_on_close = False
        self.setWindowTitle("Workroom")
        self.setObjectName("main_window")
        self.resize(1200, 640)  # the host table's columns fit beside the detail panel
        self.geometry_restored = False
        self.model = HostTableModel()
        self.table = QTableView()
        self.table.setObjectName("host_table")
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        # Every column fits next to the detail panel at the default size: state and awake time get room for
        # their longest words (a state with a typical "last known" age), the provider for the hosts listed,
        # and "Busy because" takes what is left (its cells elide; the tooltip has the whole text). The user
        # may still widen any column.
        header.setSectionResizeMode(Column.BUSY, QHeaderView.ResizeMode.Stretch)
        header.setTextElideMode(Qt.TextElideMode.ElideRight)  # a caption squeezed by the user reads "Busy b…"
        # State gets room for every state's word (and its icon) and grows to what its cells say now ("Asleep ·
        # last known idle (12 min ago)"), in steps so ticking ages do not make it twitch; it keeps no spare
        # room that "Busy because" could use.
        self._state_floor = self._room_for(Column.BADGE, LABELS.values(), True)
        for column, width in ((Column.NAME, 110), (Column.BADGE, self._state_floor),
                              (Column.BUSY_FOR, self._room_for(Column.BUSY_FOR, ("23 h 59 min", "59 min 59 s"))),
                              (Column.CONNECTION, 150)):
            self.table.setColumnWidth(column, width)
        self._fit_provider()
        for signal in (self.model.rowsInserted, self.model.rowsRemoved, self.model.modelReset):
            signal.connect(self._fit_provider)
        for signal in (self.model.rowsInserted, self.model.rowsRemoved, self.model.modelReset,
                       self.model.dataChanged):
            signal.connect(self._fit_state)
        self.detail = HostDetailView()
        self.timeline = TimelineView(controller)
        self.detail.add_section(self.timeline)
        self.cards = PromptCardsView(lambda name, face: controller.agent(name)(Method.KEEP, face=face),
                                     controller.tasks,
                                     sleeper=lambda name, face: controller.agent(name)(Method.LET_SLEEP, face=face))
        self.settings = SettingsView(ThisComputer(login_item, can_hold_idle_sleep=can_hold_idle_sleep))
        self.settings.load(controller.setting_values())
        self.detail.set_notice_settings(controller.notice_settings)
        app_settings = controller.engine.settings
        self.login_offer: LoginItemOffer | None = None
        if (login_item is not None and not app_settings.login_item_offered
                and login_item.state() is LoginItemState.OFF):
            self.login_offer = LoginItemOffer(login_item, self._login_offer_answered)

        self.problems = rich_label()
        self.problems.setObjectName("problems_banner")
        self.problems.setWordWrap(True)
        styles.set_role(self.problems, styles.BANNER)
        self._show_problems(controller.problems)
        self.action_error = rich_label()
        self.action_error.setObjectName("action_error")
        self.action_error.setWordWrap(True)
        styles.set_role(self.action_error, styles.ERROR)
        self.action_error.hide()
        self.notice = plain_label()  # may quote a host's answer (the uninstall report)
        self.notice.setObjectName("notice")
        self.notice.setWordWrap(True)
        self.notice.hide()

        self.add_button = QPushButton("Add host…")
        self.add_button.setObjectName("add_host")
        self.remove_button = QPushButton("Remove host")
        self.remove_button.setObjectName("remove_host")
        self.edit_button = QPushButton("Edit host…")
        self.edit_button.setObjectName("edit_host")
        self.connect_all_button = QPushButton("Connect all")
        self.connect_all_button.setObjectName("connect_all")
        toolbar = QHBoxLayout()
        for button in (self.add_button, self.edit_button, self.remove_button, self.connect_all_button):
            toolbar.addWidget(button)
        toolbar.addStretch(1)

        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.table)
        detail_scroll = QScrollArea()
        detail_scroll.setWidgetResizable(True)
        detail_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        detail_scroll.setMinimumWidth(self.detail.minimumWidth() + detail_scroll.verticalScrollBar().sizeHint().width()
                                      + 2 * detail_scroll.frameWidth())
        self.detail_scroll = detail_scroll
        detail_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        detail_scroll.setWidget(self.detail)
        splitter.addWidget(detail_scroll)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 1)
        hosts_page = QWidget()
        hosts_layout = QVBoxLayout(hosts_page)
        hosts_layout.addWidget(self.problems)
        if self.login_offer is not None:
            hosts_layout.addWidget(self.login_offer)
        hosts_layout.addWidget(self.cards)
        hosts_layout.addLayout(toolbar)
        hosts_layout.addWidget(self.action_error)
        hosts_layout.addWidget(self.notice)
        hosts_layout.addWidget(splitter, 1)
        self.tabs = QTabWidget()
        self.tabs.addTab(hosts_page, "Hosts")
        settings_page = QWidget()
        settings_layout = QVBoxLayout(settings_page)
        settings_layout.addWidget(self.settings)
        settings_layout.addStretch(1)
        self.tabs.addTab(settings_page, "Settings")
        self.setCentralWidget(self.tabs)
        self.add_dialog: AddHostDialog | None = None
        self.left_asleep: list[str] = []
        """The hosts the last Connect all left asleep (named in the notice)."""
        self._connect_all_pending: set[str] = set()
        """Hosts the last Connect all started on whose state was not known yet: each may turn out asleep."""

        self.ages = QTimer(self)
        """Ticks once a second while the window shows, so ages and countdowns move between events
        (it re-renders; it never asks the network)."""
        self.ages.setInterval(1000)
        self.ages.timeout.connect(self._tick)

        self.host_dialog_tester = controller.test_connection
        self._shortcuts()
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._row_menu)
        self.table.doubleClicked.connect(self._row_double_clicked)
        self._wire()
        self.geometry_restored = self.restore_geometry()
        self.model.set_snapshots(controller.snapshots())
        for snapshot in self.model.snapshots():
            self.cards.sync(snapshot)
        if self.model.rowCount() > 0:
            self.select_host(self.model.snapshots()[0].host.name)
        self._update_buttons()

    # -- wiring -----------------------------------------------------------------------------------

    def _wire(self) -> None:
        c = self.controller
        c.snapshot_changed.connect(self.on_snapshot)
        c.host_added.connect(self._host_added)
        c.host_removed.connect(self._host_removed)
        c.host_uninstalled.connect(self._host_uninstalled)
        c.failed.connect(self.show_error)
        c.settings_applied.connect(self._settings_applied)
        c.settings_failed.connect(self.settings.show_failure)
        c.host_key_prompter = self._ask_host_key
        c.secret_prompter = self._ask_secret
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        self.detail.connect_requested.connect(self._connect)
        self.detail.retry_requested.connect(self.controller.retry_now)
        self.detail.disconnect_requested.connect(self._disconnect)
        self.detail.keep_requested.connect(self._keep)
        self.cards.card_clicked.connect(self.select_host)
        self.cards.ticked.connect(self._tick)
        self.settings.apply_requested.connect(c.apply_settings)
        self.settings.local_changed.connect(c.change_setting)
        c.local_settings_changed.connect(self._local_settings_changed)
        c.stored_settings_changed.connect(lambda _names: self.settings.show_stored(self.controller.setting_values()))
        self.detail.finished_notice_toggled.connect(
            lambda name, wanted, local: c.set_finished_notice(name, wanted, this_computer=local))
        self.add_button.clicked.connect(self.open_add_dialog)
        self.edit_button.clicked.connect(self.open_edit_dialog)
        self.remove_button.clicked.connect(self.confirm_remove)
        self.connect_all_button.clicked.connect(self.connect_all)

    def _local_settings_changed(self) -> None:
        self.settings.load(self.controller.setting_values(), (Store.NOTICES, Store.THIS_COMPUTER))
        self.detail.set_notice_settings(self.controller.notice_settings)

    def _settings_applied(self, outcome: dict[str, UserError | None]) -> None:
        self.settings.load(self.controller.setting_values(), (Store.AGENTS,))
        self.settings.show_outcome(outcome)

    def on_snapshot(self, snapshot: HostSnapshot) -> None:
        self.model.update(snapshot)
        self._track_connect_all(snapshot)
        self.cards.sync(snapshot)
        if self.detail.snapshot is not None and self.detail.snapshot.host.name == snapshot.host.name:
            self.detail.show_snapshot(snapshot)
            self._update_buttons()

    def _track_connect_all(self, snapshot: HostSnapshot) -> None:
        """A host Connect all started on may only then be found asleep (and left so): name it too."""
        name = snapshot.host.name
        if name not in self._connect_all_pending:
            return
        if snapshot.connection.spec.asleep:
            self._connect_all_pending.discard(name)
            if name not in self.left_asleep:
                self.left_asleep.append(name)
            self._show_left_asleep()
        elif snapshot.connection.spec.settled:
            self._connect_all_pending.discard(name)

    def _show_left_asleep(self) -> None:
        if self.left_asleep:
            self.notice.setText(f"Left asleep: {', '.join(self.left_asleep)}. Connect all never wakes a box; "
                                "select one and click Wake and connect to wake it.")
            self.notice.show()
        else:
            self.notice.hide()

    def _tick(self) -> None:
        self.model.refresh_times()
        if self.detail.snapshot is not None:
            self.detail.show_snapshot(self.detail.snapshot)

    # -- selection --------------------------------------------------------------------------------

    def selected_name(self) -> str | None:
        return self.detail.snapshot.host.name if self.detail.snapshot is not None else None

    def select_host(self, name: str) -> None:
        row = self.model.row_of(name)
        if row is None:
            return
        self.tabs.setCurrentIndex(HOSTS_TAB)
        self.table.selectionModel().select(
            self.model.index(row, 0),
            QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows,
        )
        self.table.scrollTo(self.model.index(row, 0))

    def _selection_changed(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        self.detail.show_snapshot(self.model.snapshot(rows[0].row()) if rows else None)
        self._update_buttons()

    def _update_buttons(self) -> None:
        selected = self.detail.snapshot is not None
        self.remove_button.setEnabled(selected)
        self.edit_button.setEnabled(selected and self.detail.snapshot is not None
                                    and not self.detail.snapshot.host.is_this_computer)

    # -- keyboard, context menu, double-click --------------------------------------------------------

    def _shortcuts(self) -> None:
        """⌘/Ctrl+N add, Delete remove, ⌘/Ctrl+W close, ⌘/Ctrl+Q quit, ⌘/Ctrl+, settings."""
        self.quit_action = QAction("Quit", self)
        self.actions_by_name: dict[str, QAction] = {}
        for name, keys, slot in (
            ("add", QKeySequence.StandardKey.New, self.open_add_dialog),
            ("remove", QKeySequence.StandardKey.Delete, self.confirm_remove),
            ("close", QKeySequence(Qt.Modifier.CTRL | Qt.Key.Key_W), self.close),
            ("quit", QKeySequence(Qt.Modifier.CTRL | Qt.Key.Key_Q), self.quit_requested.emit),
            ("settings", QKeySequence(Qt.Modifier.CTRL | Qt.Key.Key_Comma), self.show_settings),
        ):
            # Spelled out where the platform's standard keys may be empty (Qt's Ctrl is ⌘ on macOS).
            action = QAction(name, self)
            action.setShortcut(QKeySequence(keys))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            action.triggered.connect(lambda _checked=False, run=slot: run())
            self.addAction(action)
            self.actions_by_name[name] = action

    def row_menu(self, name: str) -> QMenu:
        """The right-click menu of one host's row."""
        snapshot = self.model.snapshot(name)
        menu = QMenu(self)
        menu.setObjectName("row_menu")
        if snapshot is not None:
            spec = snapshot.connection.spec
            if spec.connect is not ConnectAction.NONE:
                menu.addAction(CONNECT_WORDS[spec.connect], lambda: self._connect(name))
            if spec.disconnect:
                menu.addAction("Disconnect", lambda: self._disconnect(name))
            if snapshot.badge().offers_keep:
                menu.addAction("Keep awake", lambda: self._keep(name))
            command = row_text.ssh_command(snapshot)
            if command is not None:
                menu.addAction("Copy ssh command", lambda: copy_text(command))
            menu.addSeparator()
            if not snapshot.host.is_this_computer:
                menu.addAction("Edit host…", self.open_edit_dialog)
            menu.addAction("Remove host…", self.confirm_remove)
        return menu

    def _row_menu(self, pos: QPoint) -> None:
        index = self.table.indexAt(pos)
        snapshot = self.model.snapshot(index.row()) if index.isValid() else None
        if snapshot is None:
            return
        self.select_host(snapshot.host.name)
        self.row_menu(snapshot.host.name).popup(self.table.viewport().mapToGlobal(pos))

    def _row_double_clicked(self, index: QModelIndex) -> None:
        """Double-click: the host's details, with its primary action focused."""
        snapshot = self.model.snapshot(index.row())
        if snapshot is None:
            return
        self.select_host(snapshot.host.name)
        self.detail_scroll.ensureWidgetVisible(self.detail.title)
        primary = self.detail.primary_button()
        (primary or self.detail).setFocus()

    # -- actions ----------------------------------------------------------------------------------

    def _connect(self, name: str) -> None:
        self.action_error.hide()
        self.notice.hide()
        self.left_asleep, self._connect_all_pending = [], set()
        self.controller.connect_clicked(name)  # wakes only where the button said "Wake and connect"

    def connect_all(self) -> list[str]:
        """Connect every host that is awake; name the ones left asleep and how to wake one."""
        self.action_error.hide()
        asleep = self.controller.connect_all()
        self.left_asleep = list(asleep)
        self._connect_all_pending = {n for n in self.controller.host_names() if n not in asleep}
        self._show_left_asleep()
        return asleep

    def _disconnect(self, name: str) -> None:
        self.action_error.hide()
        self.controller.disconnect_host(name)

    def keep_host(self, name: str, face: AnswerFace = AnswerFace.WINDOW) -> None:
        self._keep(name, face)

    def _keep(self, name: str, face: AnswerFace = AnswerFace.WINDOW) -> None:
        self.action_error.hide()

        async def keep() -> None:
            await self.controller.agent(name)(Method.KEEP, face=face)

        self.controller.tasks.run(f"keep:{name}", keep())

    async def _ask_host_key(self, name: str, question: HostKeyQuestion) -> bool:
        from workroom.ui.host_key_dialog import ask_host_key

        return await ask_host_key(name, question, self)

    async def _ask_secret(self, request: SecretRequest) -> str | None:
        from workroom.ui.secret_dialog import ask_secret

        return await ask_secret(request, self)

    def open_add_dialog(self) -> AddHostDialog:
        from workroom.ui.host_dialog import AddHostDialog

        dialog = AddHostDialog(self.controller.engine.hosts, self, tester=self.host_dialog_tester,
                               platform_lister=self.controller.platform_boxes)
        dialog.accepted.connect(lambda: self._add_from(dialog))
        dialog.finished.connect(dialog.deleteLater)
        self.add_dialog = dialog
        dialog.open()
        return dialog

    def open_edit_dialog(self) -> AddHostDialog | None:
        snapshot = self.detail.snapshot
        if snapshot is None or snapshot.host.is_this_computer:
            return None
        from workroom.ui.host_dialog import AddHostDialog

        dialog = AddHostDialog(self.controller.engine.hosts, self, editing=snapshot.host,
                               tester=self.host_dialog_tester)
        dialog.accepted.connect(lambda: self._edit_from(dialog))
        dialog.finished.connect(dialog.deleteLater)
        self.add_dialog = dialog
        dialog.open()
        return dialog

    def _edit_from(self, dialog: AddHostDialog) -> None:
        if isinstance(dialog.host, Host) and dialog.editing is not None:
            self.controller.edit_host(dialog.editing.name, dialog.host, was=dialog.editing)

    def _add_from(self, dialog: AddHostDialog) -> None:
        host = dialog.host
        if not isinstance(host, Host):
            return
        try:
            self.controller.add_host(host)
        except UserError as error:
            self.show_error(error)

    def confirm_remove(self) -> QMessageBox | None:
        """Remove asks whether to uninstall the agent too (stopped the way it was started, then its files
        removed); on an asleep box that button says it wakes it, and only that button does."""
        name = self.selected_name()
        if name is None:
            return None
        snapshot = self.model.snapshot(name)
        asleep = snapshot is not None and snapshot.connection.spec.asleep
        box = message_box(QMessageBox.Icon.Question, "Remove host", f"Remove {name} from this computer's hosts?",
                          informative="Uninstall stops its agent on the host and removes it. Without it the agent "
                          "keeps running there, and keeps a busy box awake with nobody left to ask."
                          + (f" {name} is asleep: uninstalling wakes it." if asleep else ""), parent=self)
        box.setObjectName("remove_confirm")
        uninstall = box.addButton("Wake, uninstall and remove" if asleep else "Uninstall and remove",
                                  QMessageBox.ButtonRole.AcceptRole)
        uninstall.setObjectName("remove_uninstall")
        only = box.addButton("Remove only", QMessageBox.ButtonRole.DestructiveRole)
        only.setObjectName("remove_only")
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(cancel)
        box.buttonClicked.connect(lambda button: self._remove_answered(
            name, "uninstall" if button is uninstall else "only" if button is only else ""))
        box.open()
        return box

    def _remove_answered(self, name: str, choice: str) -> None:
        if choice:
            self.action_error.hide()
            self.controller.remove_host(name, uninstall=choice == "uninstall")

    def _host_uninstalled(self, name: str, words: str) -> None:
        self.notice.setText(f"Removed {name}; on the host: {words}.")
        self.notice.show()

    def _host_added(self, snapshot: HostSnapshot) -> None:
        self.model.update(snapshot)
        self.select_host(snapshot.host.name)

    def _host_removed(self, name: str) -> None:
        self.model.remove(name)
        self.cards.forget_host(name)
        if self.selected_name() == name:
            self.detail.show_snapshot(None)
        self._update_buttons()

    def show_error(self, error: UserError) -> None:
        self.action_error.setText(markup("<b>{}</b>: {}", error.title, breakable(
            f"{without_exception_names(error.message)} {error.advice(Face.APP)}")))
        self.action_error.show()

    def _show_problems(self, problems: list[UserError]) -> None:
        if not problems:
            self.problems.hide()
            return
        self.problems.setText("<br>".join(markup("<b>{}</b>: {} {}", p.title, p.message, p.hint) for p in problems))
        self.problems.show()

    def show_settings(self) -> None:
        self.tabs.setCurrentIndex(SETTINGS_TAB)
        self.settings.refresh_system()  # the login item may have been changed in the system's own settings
        self.bring_up()

    def _login_offer_answered(self, accepted: bool) -> None:
        self.controller.save_app_settings(login_item_offered=True)
        self.settings.refresh_system()

    def bring_up(self) -> None:
        self.show()
        self.raise_()
        self.activateWindow()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.ages.start()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_state()  # the room "Busy because" keeps depends on the window's width

    def _fit_provider(self) -> None:
        self.table.resizeColumnToContents(Column.PROVIDER)

    def _fit_state(self, *_args: object) -> None:
        """State grows to what its cells say, but never into the room "Busy because" needs for its caption: past
        that its cells elide (their tooltips have the whole text)."""
        need = max(self._state_floor, self.table.sizeHintForColumn(Column.BADGE))
        width = -(-need // STATE_WIDTH_STEP) * STATE_WIDTH_STEP
        header = self.table.horizontalHeader()
        others = sum(self.table.columnWidth(c) for c in Column if c not in (Column.BADGE, Column.BUSY))
        room = self.table.viewport().width() - others - header.sectionSizeHint(Column.BUSY)
        width = max(self._state_floor, min(width, room))
        if self.table.columnWidth(Column.BADGE) != width:
            self.table.setColumnWidth(Column.BADGE, width)

    def _room_for(self, column: Column, words: Iterable[str], icon: bool = False) -> int:
        """A column's width for the longest of `words` (and the state icon), or for its caption if wider."""
        widest = max(self.table.fontMetrics().horizontalAdvance(w) for w in words)
        icon_width = self.table.style().pixelMetric(QStyle.PixelMetric.PM_SmallIconSize) + 8 if icon else 0
        return max(self.table.horizontalHeader().sectionSizeHint(column), widest + icon_width + 16)

    def _geometry_file(self) -> str:
        return str(self.controller.engine.paths.state_dir / "window.ini")

    def restore_geometry(self) -> bool:
        """Put the window where and as big as the user left it (False: nothing remembered)."""
        saved = QSettings(self._geometry_file(), QSettings.Format.IniFormat).value("geometry")
        return isinstance(saved, QByteArray) and self.restoreGeometry(saved)

    def save_geometry(self) -> None:
        settings = QSettings(self._geometry_file(), QSettings.Format.IniFormat)
        settings.setValue("geometry", self.saveGeometry())
        settings.sync()

    def hideEvent(self, event: QHideEvent) -> None:
        self.save_geometry()
        super().hideEvent(event)
        self.ages.stop()

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.hide_on_close:
            event.ignore()
            self.hide()
            return
        super().closeEvent(event)
