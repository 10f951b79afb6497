"""The agent's own log lines (agent_log.py): the format the logging package gave, info only once serve set the
stream, a traceback with an exception, a wrong format kept as a line, and a closed stream costing the line only."""

import io
import re
import sys

import pytest
from wr_agent import agent_log

pytestmark = pytest.mark.unit

LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} wr-agent\[\d+\] (INFO|WARNING|ERROR) ")


def test_before_serve_sets_the_stream_only_warnings_reach_stderr(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    log = agent_log.Log()
    log.info("not said")
    log.warning("said %s", "once")
    (line,) = err.getvalue().splitlines()
    assert LINE.match(line) and line.endswith("WARNING said once")


def test_lines_after_to_stream_with_a_traceback_and_a_wrong_format():
    out = io.StringIO()
    log = agent_log.Log()
    log.to_stream(out)
    log.info("serving %s (build %s)", "/run/a.sock", "abc")
    try:
        raise ValueError("bad tick")
    except ValueError:
        log.exception("tick failed")
    log.error("two %s %s", "only-one")  # the log's own bug: the line is kept, not lost
    lines = out.getvalue().splitlines()
    assert LINE.match(lines[0]) and lines[0].endswith("INFO serving /run/a.sock (build abc)")
    assert lines[1].endswith("ERROR tick failed") and lines[2] == "Traceback (most recent call last):"
    assert "ValueError: bad tick" in out.getvalue()
    assert lines[-1].endswith("ERROR two %s %s ('only-one',)")


def test_a_closed_stream_costs_the_line_not_the_caller():
    out = io.StringIO()
    log = agent_log.Log()
    log.to_stream(out)
    out.close()
    log.warning("disk full")  # no exception
    log.flush()
