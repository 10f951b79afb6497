"""The agent's log: one line per event, `<time> wr-agent[<pid>] <LEVEL> <message>`, to the `--log` file or stderr.

Not the logging package: the agent writes a few dozen kinds of line from one process, and logging with what it
imports (traceback, linecache, tokenize, string) is about 0.9 MB of a resident size kept under 16 MB
(bench/agent_bench.py). A traceback is formatted (and its module imported) only when an exception is logged.
Until `to_stream` is called (serve's start), only warnings and errors are written, to stderr, as logging did with
no handler set; a tool that imports agent modules sees no info lines.
"""

import os
import sys
import threading
import time

_LEVELS = {"INFO": 20, "WARNING": 30, "ERROR": 40}


class Log(object):
    def __init__(self):
        self.stream = None  # None: stderr, warnings and errors only
        self.level = _LEVELS["WARNING"]
        self.lock = threading.Lock()

    def to_stream(self, stream):
        """Write every line from info up to `stream` (an open text file), from now on."""
        with self.lock:
            self.stream, self.level = stream, _LEVELS["INFO"]

    def info(self, msg, *args):
        self._emit("INFO", msg, args)

    def warning(self, msg, *args):
        self._emit("WARNING", msg, args)

    def error(self, msg, *args):
        self._emit("ERROR", msg, args)

    def exception(self, msg, *args):
        """An error with the exception being handled, its traceback on the lines after."""
        self._emit("ERROR", msg, args, with_traceback=True)

    def flush(self):
        with self.lock:
            try:
                (self.stream or sys.stderr).flush()
            except (OSError, ValueError, AttributeError):
                pass

    def _emit(self, level, msg, args, with_traceback=False):
        if _LEVELS[level] < self.level:
            return
        try:
            text = msg % args if args else str(msg)
        except (TypeError, ValueError):  # a wrong format is the log's bug: keep the line, not lose it
            text = "%s %r" % (msg, args)
        if with_traceback:
            import traceback
            tb = traceback.format_exc().rstrip()
            if tb and tb != "NoneType: None":
                text += "\n" + tb
        now = time.time()
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + ",%03d" % (int(now * 1000) % 1000)
        line = "%s wr-agent[%d] %s %s\n" % (stamp, os.getpid(), level, text)
        with self.lock:
            stream = self.stream or sys.stderr
            try:
                stream.write(line)
                stream.flush()
            except (OSError, ValueError, AttributeError):  # a full disk or a closed stderr costs the line only
                pass


log = Log()
