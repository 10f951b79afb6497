"""`workroom-app`: the desktop app's entry point."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from PySide6.QtWidgets import QApplication, QMainWindow

    app = QApplication(sys.argv if argv is None else argv)
    window = QMainWindow()
    window.setWindowTitle("Workroom")
    window.show()
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
