"""How a process of the agent names itself (imported alone by the relay, the bundle's hot path)."""


def set_comm(name):
    """Name this process in /proc (ps, top, and our own exclusion list) — best effort, Linux only."""
    try:
        with open("/proc/self/comm", "w") as f:
            f.write(name[:15])
    except OSError:
        pass
