"""The agent's clocks, and which one measures what (docs/agent.md, "Clocks").

Ticks are paced on time.monotonic. A gap between ticks (the box slept) and the length of a span in the
why-awake record are measured on a clock that keeps counting while the machine is suspended and never steps
with the wall clock: CLOCK_BOOTTIME on Linux (CLOCK_MONOTONIC stops while a guest is suspended), and
CLOCK_MONOTONIC on macOS (which counts sleep there, unlike Python's time.monotonic). Where neither exists
the agent falls back to time.monotonic and says so (SUSPEND_CLOCK_NAME is None).
"""

import sys
import time


def _pick():
    if hasattr(time, "CLOCK_BOOTTIME"):
        return "boottime", time.CLOCK_BOOTTIME
    if sys.platform == "darwin" and hasattr(time, "CLOCK_MONOTONIC"):
        return "monotonic (counts sleep)", time.CLOCK_MONOTONIC
    return None, None


SUSPEND_CLOCK_NAME, _CLOCK_ID = _pick()


def suspend_aware():
    """Seconds on a clock that counts suspend and does not step (see the module docstring)."""
    if _CLOCK_ID is None:
        return time.monotonic()
    return time.clock_gettime(_CLOCK_ID)
