"""A sleepable box on this machine: a vmd-style idle rule, simulated with network namespaces.

Public API (the `workroom-simbox` command and the tests call these; see docs/simbox.md):
`up`, `status`, `box_status`, `down`, `wake`, `sleep`, `load`, `connection_info`, `exec_argv`,
`SimboxState`, `BoxRecord`, `SimboxError`. Linux and root only. No Qt here.
"""

from simbox.control import (
    box_status,
    connection_info,
    down,
    exec_argv,
    load,
    sleep,
    status,
    up,
    wake,
)
from simbox.state import BoxRecord, SimboxError, SimboxState, simbox_dir

__all__ = ["BoxRecord", "SimboxError", "SimboxState", "box_status", "connection_info", "down", "exec_argv",
           "load", "simbox_dir", "sleep", "status", "up", "wake"]
