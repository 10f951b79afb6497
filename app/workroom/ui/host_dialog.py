"""The add-host dialog: fields checked by core.hosts.Host itself, each problem shown under its field.

`host_from_fields` is the rule (no widgets); the dialog only shows what it says.
"""

from __future__ import annotations

from pydantic import ValidationError
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from workroom.core.hosts import LOCAL_PROVIDER, Host, HostsFile, IdentityRef
from workroom.core.traits import PROVIDER_KINDS
from workroom.ui import styles

FIELDS = ("name", "provider", "address", "port", "user", "identity", "idle_window_seconds", "agent_candidates")
GENERAL = "general"
CANDIDATE_CHOICES = {"Provider default": "", "Only my processes": "user", "Every process": "all"}


def _clean(text: str) -> str | None:
    text = text.strip()
    return text or None


def host_from_fields(fields: dict[str, str], existing: HostsFile) -> Host | dict[str, str]:
    """A valid new Host from the dialog's text fields, or {field: what is wrong} (GENERAL for the whole)."""
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
    return host


def _message(item: object) -> str:
    """One pydantic error as a sentence a person can act on."""
    loc = item.get("loc", ()) if isinstance(item, dict) else ()
    if loc and loc[0] == "port":
        return "A port is a whole number from 1 to 65535."
    if loc and loc[0] == "idle_window_seconds":
        return "The idle window must be a positive number of seconds."
    msg = str(item.get("msg", item) if isinstance(item, dict) else item).removeprefix("Value error, ").strip()
    return msg[:1].upper() + msg[1:] + ("" if msg.endswith(".") else ".")


class AddHostDialog(QDialog):
    """Add a host. `host` holds the checked Host once the dialog is accepted."""

    def __init__(self, existing: HostsFile, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Add a host")
        self.setObjectName("add_host_dialog")
        self.existing = existing
        self.host: Host | None = None
        self.inputs: dict[str, QLineEdit | QComboBox] = {}
        self.errors: dict[str, QLabel] = {}
        form = QFormLayout()
        self._line("name", "Workroom name", form, "e.g. gpu-box")
        provider = QComboBox()
        provider.addItems([k for k in PROVIDER_KINDS if k != LOCAL_PROVIDER] + [LOCAL_PROVIDER])
        self._row("provider", "Provider", provider, form)
        self._line("address", "Address", form, "host name or IP; empty = the name (an ~/.ssh/config alias)")
        self._line("port", "Port", form, "22 or ~/.ssh/config's")
        self._line("user", "User", form, "~/.ssh/config's or yours")
        self._line("identity", "Key file", form, "path to a private key file (never the key itself)")
        self._line("idle_window_seconds", "Idle window (s)", form, "the provider's, when empty")
        candidates = QComboBox()
        candidates.addItems(list(CANDIDATE_CHOICES))
        self._row("agent_candidates", "What counts as work", candidates, form)
        self.general = QLabel()
        self.general.setObjectName("error_general")
        self.general.setWordWrap(True)
        styles.set_role(self.general, styles.ERROR)
        self.general.hide()
        self.errors[GENERAL] = self.general
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.ok_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok_button.setText("Add host")
        self.buttons.accepted.connect(self.try_accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.general)
        layout.addWidget(self.buttons)

    def _line(self, key: str, label: str, form: QFormLayout, placeholder: str) -> None:
        edit = QLineEdit()
        edit.setPlaceholderText(placeholder)
        self._row(key, label, edit, form)

    def _row(self, key: str, label: str, widget: QLineEdit | QComboBox, form: QFormLayout) -> None:
        widget.setObjectName(f"field_{key}")
        error = QLabel()
        error.setObjectName(f"error_{key}")
        error.setWordWrap(True)
        styles.set_role(error, styles.ERROR)
        error.hide()
        box = QVBoxLayout()
        box.setSpacing(2)
        box.addWidget(widget)
        box.addWidget(error)
        form.addRow(label, box)
        self.inputs[key] = widget
        self.errors[key] = error

    def fields(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, widget in self.inputs.items():
            if isinstance(widget, QLineEdit):
                out[key] = widget.text()
            elif key == "agent_candidates":
                out[key] = CANDIDATE_CHOICES[widget.currentText()]
            else:
                out[key] = widget.currentText()
        return out

    def try_accept(self) -> None:
        result = host_from_fields(self.fields(), self.existing)
        for label in self.errors.values():
            label.hide()
            label.setText("")
        if isinstance(result, Host):
            self.host = result
            self.accept()
            return
        for key, message in result.items():
            label = self.errors.get(key, self.general)
            label.setText(message)
            label.show()
