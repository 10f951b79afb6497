"""Background work on the one asyncio loop (qasync): keep a reference to every task, cancel a
superseded task of the same name, and hand failures back to the UI instead of losing them.

Without a reference asyncio may garbage-collect a running task; without a failure callback an
exception in a task started from a button would vanish.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)

FailureHandler = Callable[[str, BaseException], None]


class TaskKeeper:
    def __init__(self, on_failure: FailureHandler | None = None) -> None:
        self._tasks: dict[str, asyncio.Task[Any]] = {}
        self._anonymous: set[asyncio.Task[Any]] = set()
        self.on_failure = on_failure

    def run(self, name: str, coro: Coroutine[Any, Any, Any], *, supersede: bool = True) -> asyncio.Task[Any]:
        """Start `coro` as task `name`; a still-running task of that name is cancelled first."""
        previous = self._tasks.get(name)
        if previous is not None and not previous.done() and supersede:
            previous.cancel()
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks[name] = task
        task.add_done_callback(lambda t: self._finished(name, t))
        return task

    def _finished(self, name: str, task: asyncio.Task[Any]) -> None:
        if self._tasks.get(name) is task:
            del self._tasks[name]
        if task.cancelled():
            return
        error = task.exception()
        if error is None:
            return
        if self.on_failure is not None:
            self.on_failure(name, error)
        else:
            log.error("task %s failed", name, exc_info=error)

    def running(self, name: str) -> bool:
        task = self._tasks.get(name)
        return task is not None and not task.done()

    async def cancel_all(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
