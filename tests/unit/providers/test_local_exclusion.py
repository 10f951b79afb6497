"""This computer's app leaves itself out of its agent's candidates by pid *and* start time."""

import os
import sys
from pathlib import Path

import pytest
from workroom.providers.local import app_exclusion

pytestmark = pytest.mark.unit


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_app_passes_its_pid_pinned_to_its_start_time():
    flag, value = app_exclusion()
    pid, start = value.split(":")
    assert flag == "--exclude-pid" and pid == str(os.getpid())
    raw = Path(f"/proc/{os.getpid()}/stat").read_text()
    assert start == raw[raw.rfind(")") + 2:].split()[19]


def test_without_proc_the_app_passes_nothing(tmp_path):
    """macOS: the ps sampler cannot check a start time; the app is left out as a live subscriber."""
    assert app_exclusion(tmp_path / "missing") == ()
