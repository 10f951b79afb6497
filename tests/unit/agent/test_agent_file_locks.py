"""file_locks on the real kernel: SQLite's busy handler retrying a lock another process holds, read from /proc."""

import os
import subprocess
import sys
import time

import pytest
from wr_agent import file_locks, proc_entry

pytestmark = [pytest.mark.unit,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and /proc/locks are Linux's")]

HOLD = """import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute('BEGIN EXCLUSIVE'); db.execute('insert into t values (1)')
print('held', flush=True); time.sleep(30)
"""
WAIT = """import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
print('asking', flush=True); db.execute('insert into t values (2)')
"""


def test_sqlite_busy_handler_is_a_sleeper_on_a_file_another_holds_a_lock_on(tmp_path):
    """The real SQLite library (Python's sqlite3, a 30 s busy timeout) asking to write while another connection
    holds an exclusive transaction: it sleeps on a timer between tries (a heartbeat by its sleeps), and /proc/locks
    names the holder's lock on the database it has open. The holder itself is not waiting on its own lock."""
    import sqlite3

    path = str(tmp_path / "app.db")
    db = sqlite3.connect(path)
    db.execute("create table t(x)")
    db.commit()
    db.close()
    holder = subprocess.Popen([sys.executable, "-c", HOLD, path], stdout=subprocess.PIPE)
    waiter = None
    try:
        assert holder.stdout.readline().strip() == b"held"
        waiter = subprocess.Popen([sys.executable, "-c", WAIT, path], stdout=subprocess.PIPE)
        assert waiter.stdout.readline().strip() == b"asking"
        deadline, kinds = time.monotonic() + 10, set()
        while time.monotonic() < deadline and "timer" not in kinds:
            with open(f"/proc/{waiter.pid}/wchan") as f:
                kinds.add(proc_entry.kind(f.read().strip()))
            time.sleep(0.02)
        assert "timer" in kinds  # between tries it sleeps on a timer
        held = file_locks.held_locks("/proc")
        st = os.stat(path)
        assert holder.pid in held[(os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)]
        assert file_locks.locked_by_another("/proc", str(waiter.pid), held)
        assert not file_locks.locked_by_another("/proc", str(holder.pid), held)
        holder.kill()
        holder.wait(timeout=10)
        waiter.wait(timeout=20)  # the lock went with its holder: the insert went through
        assert waiter.returncode == 0
    finally:
        for p in (holder, waiter):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(timeout=10)
