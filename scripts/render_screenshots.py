"""Screenshots for the README and docs/ui.md, taken from a new user's first hour on a real X desktop, in a light and
a dark palette: the same scripted hour as tests/gui/test_first_hour.py (tests/gui/first_hour.py).

What runs: Xvfb (its own display number), openbox (window manager) and trayer (system tray host); a private D-Bus
session bus with GNOME's notification-daemon, which draws a notification's buttons (dunst, which the
notification tests drive, offers them only in its context menu), so the prompt's notification is drawn in that
server's theme, one picture; a real OpenSSH server on loopback named in the run's own ~/.ssh/config; the
simulator brought up by `workroom-simbox up --json`; the app as its own process (tests/gui/first_hour_driver.py
clicks in it). The hour: this computer (the first run), the SSH host added from the ~/.ssh/config list, the
simulated box added with the URL `up --json` prints first, a compiler-like job (`cc1plus`) past a 30 s ceiling
in ask mode, answered with `workroom keep`, then Let it sleep, asleep, woken. The pictures are of those real
states. Three views the hour does not reach are drawn from constructed snapshots (scripts/demo_states.py): every
badge state side by side (`demo_*`), the host-key question, and a day of the why-awake record.

    sudo apt-get install xvfb openbox trayer x11-utils dbus-daemon notification-daemon openssh-server
    sudo .venv/bin/python scripts/render_screenshots.py [--out docs/screenshots] [--theme light|dark|both]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "app"), str(ROOT / "agent_bundle"), str(ROOT / "tools" / "simbox"), str(ROOT / "scripts"),
                str(ROOT / "tests"), str(ROOT / "tests" / "gui")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--theme", choices=("light", "dark", "both"), default="both")
    args = parser.parse_args(argv)
    if os.geteuid() != 0 or not sys.platform.startswith("linux"):
        raise SystemExit("the simulator and the test user need root on Linux (see docs/simbox.md)")
    import first_hour
    from fixtures import sshd

    themes = ("light", "dark") if args.theme == "both" else (args.theme,)
    work = Path(tempfile.mkdtemp(prefix="wr-shots-"))
    server = sshd.launch(sshd.make_workdir())
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        report = first_hour.run(server, work, shots=args.out, themes=themes)
    except first_hour.Unavailable as error:
        raise SystemExit(str(error)) from None
    finally:
        sshd.shutdown(server)
        shutil.rmtree(work, ignore_errors=True)
    for path in sorted(args.out.glob("*.png")):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    print(f"first hour: {report.figures}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
