"""The frozen app acting as Python for its local agent (platform/interpreter.run_as_python) takes the interpreter
flags the agent's launcher passes (`-I -S`: launcher.AGENT_FLAGS) and runs what follows them; before, a built app
could not start its own local agent at all (tests/integration/test_packaging.py, the built app itself)."""

from __future__ import annotations

from pathlib import Path

import pytest
from workroom.platform.interpreter import run_as_python
from wr_agent import launcher

pytestmark = pytest.mark.unit


def test_the_launchers_flags_are_taken_before_code_and_files(tmp_path: Path) -> None:
    assert run_as_python([*launcher.AGENT_FLAGS, "-c", "import sys; sys.exit(3)"]) == 3
    script = tmp_path / "s.py"
    script.write_text("import sys; sys.exit(int(sys.argv[1]))\n")
    assert run_as_python([*launcher.AGENT_FLAGS, str(script), "4"]) == 4
    assert run_as_python(["-I", "-S"]) == 2  # flags and nothing to run: said, as before
