"""The add-host dialog: fields checked by core.hosts.Host itself, each problem shown under its field.

`host_from_fields` is the rule (no widgets); the dialog only shows what it says.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Protocol

import shiboken6
from pydantic import ValidationError
from PySide6.QtCore import Qt
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from workroom.core.hosts import (
    Host,
    HostsFile,
    IdentityRef,
    RenamedHostError,
    UnsafeHostNameError,
    check_edited_host,
    check_new_host,
)
from workroom.core.provider_specs import PROVIDER_SPECS, ProviderSpec, ReferenceField
from workroom.ui import styles
from workroom.ui.app_controller import WAKE_AND_TEST_WORDS
from workroom.ui.plain_widgets import code_label, code_text, fit_height, plain_label, set_tooltip
from workroom.ui.ssh_aliases import PickerEntry, platform_entries, scan_config


class TesterOutcome(Protocol):
    @property
    def ok(self) -> bool: ...

    @property
    def words(self) -> str: ...

    @property
    def asleep(self) -> bool: ...


PlatformLister = Callable[[], Awaitable[list[tuple[str, list[tuple[str, str]]]]]]
"""Each platform provider's own list of boxes, (kind, [(name, its state word)]), read through its CLI."""


class Tester(Protocol):
    """Log in to a host once: logged in?, what happened in words, found asleep?; an asleep box only with `wake`."""

    def __call__(self, host: Host, *, wake: bool = False) -> Awaitable[TesterOutcome]: ...


TEST = "Test connection"
WAKE_AND_TEST = WAKE_AND_TEST_WORDS
"""The test button once the provider said the box is asleep, or cannot say: the one click that may wake it."""

FIELDS = ("name", "provider", "address", "port", "user", "identity", "reference", "idle_window_seconds",
          "agent_candidates")
"""The Host fields the dialog shows; an edit keeps every other one (the hourly price, set in the timeline)."""
GENERAL = "general"
DIALOG_MIN_WIDTH = 560
"""Wide enough that every placeholder and a one-line error show whole."""
CANDIDATE_CHOICES = {"Provider default": "", "Only the login user's processes": "user", "Every process": "all"}
"""`user`: processes of the user the app logs in as on the host (this computer: you), not other accounts'."""
PROVIDER_CHOICES = tuple(PROVIDER_SPECS)
"""The provider list, in the specs' order (this computer last)."""
REFERENCE_FIELDS: dict[str, ReferenceField] = {f.name: f for spec in PROVIDER_SPECS.values() for f in spec.reference}
"""Every reference field any provider asks for, by name: one row each, shown for the providers that ask."""


def ref_key(field: ReferenceField) -> str:
    """The dialog's key (and widget name suffix) for a reference field."""
    return f"ref_{field.name}"


def spec_of(provider: str) -> ProviderSpec:
    """The spec of a provider the list shows (every entry is a spec's kind)."""
    return PROVIDER_SPECS[provider]


def provider_choices(*, has_local: bool, editing: Host | None = None,
                     simulator_installed: bool | None = None) -> list[str]:
    """The Provider list: every kind a user's work can run on; this computer only while it is not a host yet
    (a second "local" would be the same machine twice); a development tool only where its module is installed
    (`simulator_installed` says so for every such row; None: looked up)."""
    import importlib.util

    def offered(spec: ProviderSpec) -> bool:
        if not spec.only_with_module:
            return True
        if simulator_installed is not None:
            return simulator_installed
        return importlib.util.find_spec(spec.only_with_module) is not None

    kinds = [k for k in PROVIDER_CHOICES if not spec_of(k).is_this_computer and offered(spec_of(k))]
    if not has_local:
        kinds += [k for k in PROVIDER_CHOICES if spec_of(k).is_this_computer]
    if editing is not None and editing.provider not in kinds:
        kinds.append(editing.provider)  # an existing host keeps its provider, whatever it is
    return kinds


def _clean(text: str) -> str | None:
    text = text.strip()
    return text or None


def host_from_fields(fields: dict[str, str], existing: HostsFile,
                     editing: Host | None = None) -> Host | dict[str, str]:
    """A valid new Host from the dialog's text fields, or {field: what is wrong} (GENERAL for the whole).

    `editing`: the host being edited; the result keeps its fields the dialog does not show (FIELDS).
    """
    errors: dict[str, str] = {}
    values: dict[str, object] = {"name": fields.get("name", ""), "provider": fields.get("provider", "")}
    for key in ("address", "user", "agent_candidates"):
        value = _clean(fields.get(key, ""))
        if value is not None:
            values[key] = value
    port_text = _clean(fields.get("port", ""))
    if port_text is not None:
        if port_text.isdigit():
            values["port"] = int(port_text)
        else:
            errors["port"] = f"A port is a whole number from 1 to 65535, not {port_text!r}."
    window_text = _clean(fields.get("idle_window_seconds", ""))
    if window_text is not None:
        try:
            values["idle_window_seconds"] = float(window_text)
        except ValueError:
            errors["idle_window_seconds"] = f"The idle window is a number of seconds, not {window_text!r}."
    identity_text = _clean(fields.get("identity", ""))
    if identity_text is not None:
        try:
            values["identity"] = IdentityRef.file(identity_text)
        except ValidationError as error:
            errors["identity"] = _message(error.errors()[0])
    provider = fields.get("provider", "")
    spec = PROVIDER_SPECS.get(provider)
    reference: dict[str, str] = {}
    for asked in spec.reference if spec is not None else ():
        value = _clean(fields.get(ref_key(asked), ""))
        if value is None:
            if asked.required:
                errors[ref_key(asked)] = f"A {provider} host needs its {asked.label} here."
            continue
        try:
            reference[asked.name] = asked.check(value)
        except ValueError as error:
            errors[ref_key(asked)] = _sentence(str(error))
    values["reference"] = reference
    if errors:
        return errors
    try:
        host = Host.model_validate(values)
    except ValidationError as error:
        for item in error.errors():
            loc = item["loc"]
            field = str(loc[0]) if loc else GENERAL
            errors.setdefault(field if field in FIELDS else GENERAL, _message(item))
        return errors
    if existing.get(host.name) is not None:
        return {"name": f"There is already a host called {host.name!r}; pick another name."}
    if editing is not None:
        kept = {key: value for key, value in editing if key not in FIELDS}
        host = host.model_copy(update=kept)
    try:
        return check_new_host(host) if editing is None else check_edited_host(editing, host)
    except UnsafeHostNameError as error:
        return {error.what if error.what in FIELDS else GENERAL: f"{error.message} {error.hint}"}
    except RenamedHostError as error:
        return {"name": f"{error.message} {error.hint}"}


def fields_of(host: Host) -> dict[str, str]:
    """The dialog's text fields for an existing host (the inverse of `host_from_fields`)."""
    def text(value: object) -> str:
        return "" if value is None else str(value)

    window = host.idle_window_seconds
    return {
        "name": host.name, "provider": host.provider, "address": text(host.address), "port": text(host.port),
        "user": text(host.user), "identity": host.identity.value if host.identity is not None else "",
        **{ref_key(field): text(field.of(host.reference)) for field in REFERENCE_FIELDS.values()},
        "idle_window_seconds": "" if window is None else _exact(window),
        "agent_candidates": text(host.agent_candidates),
    }


def _exact(seconds: float) -> str:
    """A number of seconds as text that reads back as the same number (not rounded to six digits)."""
    return str(int(seconds)) if seconds.is_integer() else repr(seconds)


def _message(item: object) -> str:
    """One pydantic error as a sentence a person can act on."""
    loc = item.get("loc", ()) if isinstance(item, dict) else ()
    if loc and loc[0] == "port":
        return "A port is a whole number from 1 to 65535."
    if loc and loc[0] == "idle_window_seconds":
        return "The idle window must be a positive number of seconds."
    return _sentence(str(item.get("msg", item) if isinstance(item, dict) else item).removeprefix("Value error, "))


def _sentence(msg: str) -> str:
    msg = msg.strip()
    return msg[:1].upper() + msg[1:] + ("" if msg.endswith(".") else ".")


class AddHostDialog(QDialog):
    """Add a host (or edit one: `editing`). `host` holds the checked Host once the dialog is accepted.

    "Test connection" asks `tester` (async Host -> (ok, words)) and shows the answer under the fields;
    the host is saved only by "Add host" / "Save".
    """

    def __init__(self, existing: HostsFile, parent: QWidget | None = None, *, editing: Host | None = None,
                 aliases: list[str] | None = None, tester: Tester | None = None,
                 platform_lister: PlatformLister | None = None) -> None:
        super().__init__(parent)
        self.editing = editing
        self.setWindowTitle("Edit host" if editing else "Add a host")
        self.setObjectName("add_host_dialog")
        self.existing = existing.remove(editing.name) if editing and existing.get(editing.name) else existing
        self.host: Host | None = None
        self.tester = tester
        self.inputs: dict[str, QLineEdit | QComboBox] = {}
        self.errors: dict[str, QLabel] = {}
        self.key_browser: QFileDialog | None = None
        form = QFormLayout()
        self.alias_picker = QComboBox()
        self.alias_picker.setObjectName("ssh_alias")
        self.alias_picker.addItem("Choose a host from ~/.ssh/config or your platforms…")
        scan = scan_config() if aliases is None else None
        self._prefixes = scan.prefixes if scan is not None else {}
        entries = scan.entries if scan is not None else [PickerEntry(label=a, name=a, alias=a) for a in aliases or ()]
        self.add_picker_entries(entries)
        self.alias_picker.activated.connect(self._alias_chosen)
        self.picker_note = code_label()  # names what a platform's CLI listed
        self.picker_note.setObjectName("picker_note")
        self.picker_note.setWordWrap(True)
        styles.set_role(self.picker_note, styles.MUTED)
        self.picker_note.hide()
        picker_box = QVBoxLayout()
        picker_box.addWidget(self.alias_picker)
        picker_box.addWidget(self.picker_note)
        self._picker_label = QLabel("SSH config")
        form.addRow(self._picker_label, picker_box)
        self._show_picker = editing is None
        self._fit_picker()
        if platform_lister is not None and editing is None:
            self._list_task = asyncio.ensure_future(self._list_platforms(platform_lister))
            self.finished.connect(lambda _result: self._list_task.cancel())  # a closed dialog lists nothing more
        self._line("name", "Workroom name", form, "e.g. gpu-box")
        provider = QComboBox()
        has_local = any(spec_of(h.provider).is_this_computer for h in existing.hosts if h.provider in PROVIDER_SPECS)
        for kind in provider_choices(has_local=has_local, editing=editing):
            provider.addItem(spec_of(kind).label or kind, kind)
        self._row("provider", "Provider", provider, form)
        self._line("address", "Address", form, "host name or IP; empty = the name (an ~/.ssh/config alias)")
        self._line("port", "Port", form, "22 or ~/.ssh/config's")
        self._line("user", "User", form, "~/.ssh/config's or yours")
        self.browse_button = QPushButton("Browse…")
        self.browse_button.setObjectName("browse_key")
        self.browse_button.clicked.connect(self.browse_key)
        self._line("identity", "Key file", form, "path to a private key file (never the key itself)",
                   extra=self.browse_button)
        self.ref_help: dict[str, QLabel] = {}
        self.ref_rows: dict[str, QVBoxLayout] = {}
        self._form = form
        for field in REFERENCE_FIELDS.values():
            help_label = code_label(field.help)
            help_label.setObjectName(f"{ref_key(field)}_help")
            help_label.setWordWrap(True)
            styles.set_role(help_label, styles.MUTED)
            self.ref_help[field.name] = help_label
            self._line(ref_key(field), field.label[:1].upper() + field.label[1:], form,
                       field.label if field.required else f"{field.label} (optional)", below=help_label)
        self._line("idle_window_seconds", "Idle window (s)", form, "the provider's, when empty")
        candidates = QComboBox()
        candidates.addItems(list(CANDIDATE_CHOICES))
        self._row("agent_candidates", "What counts as work", candidates, form)
        self.general = plain_label()
        self.general.setObjectName("error_general")
        self.general.setWordWrap(True)
        styles.set_role(self.general, styles.ERROR)
        self.general.hide()
        self.errors[GENERAL] = self.general
        self.test_result = plain_label()  # quotes what the server said
        self.test_result.setObjectName("test_result")
        self.test_result.setWordWrap(True)
        self.test_result.hide()
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.ok_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok_button.setText("Save" if editing else "Add host")
        self.test_button = self.buttons.addButton(TEST, QDialogButtonBox.ButtonRole.ActionRole)
        self.test_button.setObjectName("test_connection")
        self.test_button.clicked.connect(self.test_connection)
        self.test_button.setVisible(tester is not None)
        self.buttons.accepted.connect(self.try_accept)
        self.buttons.rejected.connect(self.reject)
        provider.currentIndexChanged.connect(lambda _i: self._provider_changed(str(provider.currentData())))
        self._provider_changed(str(provider.currentData()))
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.setMinimumWidth(DIALOG_MIN_WIDTH)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.general)
        layout.addWidget(self.test_result)
        layout.addWidget(self.buttons)
        if editing is not None:
            self._fill(editing)

    def _fill(self, host: Host) -> None:
        for key, value in fields_of(host).items():
            widget = self.inputs[key]
            if isinstance(widget, QLineEdit):
                widget.setText(value)
            elif key == "agent_candidates":
                widget.setCurrentText(next(k for k, v in CANDIDATE_CHOICES.items() if v == value))
            else:
                self.select_provider(value)
        name = self.inputs["name"]
        assert isinstance(name, QLineEdit)
        name.setReadOnly(True)  # the name keys its session, keyring entries and remembered verdict
        # ... and it must not look editable: no frame, no focus, drawn as the window's text.
        name.setFrame(False)
        name.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        styles.set_role(name, styles.READ_ONLY)
        set_tooltip(name, "The name cannot change: it keys this host's session, keyring entries and record.")

    def select_provider(self, kind: str) -> None:
        """Choose the Provider list's entry for `kind` (its label may say more than the kind)."""
        combo = self.inputs["provider"]
        assert isinstance(combo, QComboBox)
        index = combo.findData(kind)
        if index >= 0:
            combo.setCurrentIndex(index)

    def add_picker_entries(self, entries: list[PickerEntry]) -> None:
        for entry in entries:
            self.alias_picker.addItem(entry.label, entry)
        if hasattr(self, "_picker_label"):
            self._fit_picker()

    def _fit_picker(self) -> None:
        shown = self._show_picker and self.alias_picker.count() > 1
        self.alias_picker.setVisible(shown)
        self._picker_label.setVisible(shown)

    async def _list_platforms(self, lister: PlatformLister) -> None:
        """The workspaces and codespaces the platforms' own CLIs list (a `Host coder.*` block names none). A
        dialog gone meanwhile (closed, or deleted with its window) is left alone."""
        listed = await lister()
        if not shiboken6.isValid(self):
            return
        for kind, boxes in listed:
            self.add_picker_entries(platform_entries(kind, boxes, self._prefixes.get(kind)))
        if self.isVisible():
            self.fit_height()

    def _alias_chosen(self, index: int) -> None:
        if index <= 0:
            return
        entry = self.alias_picker.itemData(index)
        if not isinstance(entry, PickerEntry):
            return
        name, address, provider = self.inputs["name"], self.inputs["address"], self.inputs["provider"]
        assert isinstance(name, QLineEdit) and isinstance(address, QLineEdit) and isinstance(provider, QComboBox)
        self.picker_note.setText(code_text(entry.why))
        self.picker_note.setVisible(bool(entry.why))
        if entry.provider is not None:  # a platform's box: its provider, its name there, no address
            self.select_provider(entry.provider)
            if not name.text().strip() or name.text() == self._last_alias:
                name.setText(entry.name)
            address.setText("")
            for key, value in entry.reference.items():
                field = self.inputs.get(f"ref_{key}")
                if isinstance(field, QLineEdit):
                    field.setText(value)
            user = self.inputs["user"]
            if entry.user and isinstance(user, QLineEdit):
                user.setText(entry.user)
            self._last_alias = entry.name
            self.fit_height()
            return
        alias = entry.alias or entry.name
        if not name.text().strip() or name.text() == self._last_alias:
            name.setText(alias)
            address.setText("")
        else:
            address.setText(alias)
        self._last_alias = alias
        if spec_of(str(provider.currentData())).is_this_computer:
            self.select_provider(next(k for k, spec in PROVIDER_SPECS.items() if not spec.is_this_computer))

    _last_alias = ""

    def browse_key(self) -> QFileDialog:
        """Pick a private key file (the path is stored, never the key); opens in ~/.ssh."""
        browser = QFileDialog(self, "Choose a private key file", os.path.expanduser("~/.ssh"))
        browser.setObjectName("key_browser")
        browser.setFileMode(QFileDialog.FileMode.ExistingFile)
        browser.setOption(QFileDialog.Option.DontUseNativeDialog, True)
        browser.fileSelected.connect(self._key_chosen)
        browser.finished.connect(browser.deleteLater)
        self.key_browser = browser
        browser.open()
        return browser

    def _key_chosen(self, path: str) -> None:
        edit = self.inputs["identity"]
        assert isinstance(edit, QLineEdit)
        edit.setText(path)

    def test_connection(self) -> None:
        """Check the fields, then try to reach the host once (nothing is saved)."""
        if self.tester is None:
            return
        host = self._checked()
        if host is None:
            return
        tester = self.tester
        wake = self.test_button.text() == WAKE_AND_TEST
        self.test_button.setEnabled(False)
        self.test_result.setText(f"{'Waking and logging in to' if wake else 'Logging in to'} {host.connect_address}…")
        styles.set_role(self.test_result, "")
        self.test_result.show()

        async def run() -> None:
            try:
                outcome = await tester(host, wake=wake)
            finally:
                self.test_button.setEnabled(True)
            ok, words = outcome.ok, outcome.words
            self.test_button.setText(WAKE_AND_TEST if outcome.asleep else TEST)
            self.test_result.setText(words)
            # Asleep, not tested (a test would wake it): a state, not a failure.
            styles.set_role(self.test_result, "" if ok or outcome.asleep else styles.ERROR)
            self.fit_height()

        self._test_task = asyncio.ensure_future(run())

    def _provider_changed(self, provider: str) -> None:
        """Show the reference fields this provider asks for (its spec's), and only those."""
        asked = {field.name for field in spec_of(provider).reference}
        for name, field in REFERENCE_FIELDS.items():
            self._form.setRowVisible(self.ref_rows[ref_key(field)], name in asked)
        if self.isVisible():
            self.fit_height()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.fit_height()

    def _line(self, key: str, label: str, form: QFormLayout, placeholder: str, extra: QWidget | None = None,
              below: QWidget | None = None) -> None:
        edit = QLineEdit()
        edit.setPlaceholderText(placeholder)
        self._row(key, label, edit, form, extra, below)

    def _row(self, key: str, label: str, widget: QLineEdit | QComboBox, form: QFormLayout,
             extra: QWidget | None = None, below: QWidget | None = None) -> None:
        widget.setObjectName(f"field_{key}")
        error = plain_label()  # may quote what was typed
        error.setObjectName(f"error_{key}")
        error.setWordWrap(True)
        styles.set_role(error, styles.ERROR)
        error.hide()
        box = QVBoxLayout()
        box.setSpacing(2)
        if extra is None:
            box.addWidget(widget)
        else:
            line = QHBoxLayout()
            line.addWidget(widget, 1)
            line.addWidget(extra)
            box.addLayout(line)
        if below is not None:
            box.addWidget(below)
        box.addWidget(error)
        form.addRow(label, box)
        self.inputs[key] = widget
        self.errors[key] = error
        if key.startswith("ref_"):
            self.ref_rows[key] = box

    def fields(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, widget in self.inputs.items():
            if isinstance(widget, QLineEdit):
                out[key] = widget.text()
            elif key == "agent_candidates":
                out[key] = CANDIDATE_CHOICES[widget.currentText()]
            else:
                out[key] = str(widget.currentData() or "")
        return out

    def try_accept(self) -> None:
        host = self._checked()
        if host is not None:
            self.host = host
            self.accept()

    def _checked(self) -> Host | None:
        """The Host the fields describe, or None after showing each problem under its field."""
        result = host_from_fields(self.fields(), self.existing, self.editing)
        for label in self.errors.values():
            label.hide()
            label.setText("")
        if isinstance(result, Host):
            self.fit_height()
            return result
        for key, message in result.items():
            label = self.errors.get(key, self.general)
            label.setText(message)
            label.show()
        self.fit_height()
        return None

    def fit_height(self) -> None:
        """Grow to show every wrapped line (dialogs do not follow height-for-width on their own)."""
        fit_height(self)
