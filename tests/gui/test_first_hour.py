"""Acceptance: a new user's first hour on a real desktop (tests/gui/first_hour.py: Xvfb, openbox, trayer,
notification-daemon on a private bus, the app as its own process, a real sshd from ~/.ssh/config, the simulator
brought up by `workroom-simbox up --json` and added with the first URL it prints, answers from the real
`workroom` command). What the app showed at each step is checked for the faults a first hour met: none of them
shows. The pictures (light and dark) go to $WORKROOM_FIRST_HOUR_SHOTS when set, for a person to look at.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.gui, pytest.mark.acceptance, pytest.mark.slow, pytest.mark.root, pytest.mark.timeout(900),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="an X11 desktop (Linux)")]

NESTED = re.compile(r"\([^()]*\(")
"""A bracket opened inside an open one: "(running: sh (just now))"."""
INTERNAL = ("command -v", "python3 >/dev/null", "ended without an exit status", "Traceback", "Error:")


def every_text(facts: dict[str, Any]) -> list[str]:
    out: list[str] = [*facts["detail_labels"], *facts["detail_buttons"], *facts["cards"].values(), *facts["tray"],
                      facts["tray_tooltip"]]
    for row in facts["rows"].values():
        out += [str(v) for k, v in row.items() if isinstance(v, str)]
        out += [f"{k}: {v}" for k, v in row["detail"].items()]
    for dialog in facts["dialogs"]:
        out += dialog["labels"]
    return out


def test_the_first_hour_on_a_sleepable_box(sshd: Any, tmp_path: Path) -> None:
    import first_hour

    if os.geteuid() != 0:
        pytest.skip("the simulator needs root")
    shots = os.environ.get("WORKROOM_FIRST_HOUR_SHOTS")
    try:
        report = first_hour.run(sshd, tmp_path, shots=Path(shots) if shots else None)
    except first_hour.Unavailable as error:
        pytest.skip(str(error))
    box, alias = first_hour.BOX, first_hour.ALIAS
    print({k: v for k, v in report.figures.items()})

    # Nothing internal, nowhere, at any step; no bracket inside a bracket.
    for milestone, facts in report.seen:
        for text in every_text(facts):
            assert not any(bad in text for bad in INTERNAL), (milestone, text)
        for body in facts["cards"].values():
            assert not NESTED.search(body), (milestone, body)

    # The host-key question reads as a person says it.
    question = report.at("host key question")["dialogs"]
    assert any("offered an Ed25519 key (ssh-ed25519)" in " ".join(d["labels"]) for d in question), question

    # The columns: "Busy for", never "Awake"; an idle row shows no busy time.
    first = report.at("first run")
    assert "Busy for" in first["headers"] and "Awake" not in first["headers"]
    idle_rows = [(m, n, r) for m, f in report.seen for n, r in f["rows"].items() if r["State"].startswith("Idle")]
    assert idle_rows and all(r["Busy for"] == "—" for _, _, r in idle_rows), idle_rows
    assert first_hour.row(report.at("ssh host live"), alias)["connection_state"] in ("live", "quiet")

    # The prompt: each number named for what it counts.
    prompt = report.at("prompt")
    body = prompt["cards"][box]
    assert re.search(r"busy for .+, longer than its 30 s awake ceiling", body), body
    assert report.figures["bubble"] is not None, "no notification bubble on screen"
    assert any(s == f"{box}: keep it awake?" for s, _ in report.notified)
    # The tray menu's icons read on the dark menu.
    assert all(ratio >= 3.0 for ratio in report.figures["dark_icons"].values()), report.figures["dark_icons"]

    # workroom keep: the card and the notification went (checked as they went); Busy for goes on.
    assert "kept awake" in report.figures["keep_said"]
    kept = first_hour.row(report.at("kept from the command line"), box)
    assert kept["detail"]["Awake ceiling"].endswith("of 30 s used (ask at the ceiling)"), kept["detail"]
    busy_for = first_hour._seconds(kept["Busy for"])
    used = first_hour._seconds(kept["detail"]["Awake ceiling"].split(" of ")[0])
    assert busy_for >= 30 > used + 20, (kept["Busy for"], kept["detail"]["Awake ceiling"])

    # Asleep: said as asleep, with what was last known; Wake and connect, never Offline or Retry now.
    asleep = report.at("asleep")
    row = first_hour.row(asleep, box)
    assert row["State"].startswith("Asleep · last known busy"), row
    assert "Wake and connect" in asleep["detail_buttons"] and "Retry now" not in asleep["detail_buttons"]
    for text in every_text(asleep):
        assert "Offline" not in text and "Retry now" not in text, text
    assert report.figures["click_to_asleep_s"] <= first_hour.IDLE_WINDOW + 10

    # Woken: the ceiling restarted; the Let it sleep did not carry over.
    for milestone in ("woken", "woken, a few seconds on"):
        woken = first_hour.row(report.at(milestone), box)
        assert not woken["let_sleep"] and "you chose Let it sleep" not in woken["tooltip"], (milestone, woken)
        assert woken["State"].startswith("Busy"), (milestone, woken)

    # The job ended: the row said when it would sleep, and it slept about then.
    assert first_hour.row(report.at("idle, says when"), box)["Busy for"] == "—"
    assert abs(report.figures["asleep_vs_said_s"]) <= 6, report.figures
