"""No exception type names in what a person reads."""

from __future__ import annotations

import pytest
from workroom.core.exception_names import shows_exception_name, without_exception_names

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("raw", "plain"), [
    ("ConnectionError: The stream `python3 relay` ended without exit status",
     "The stream `python3 relay` ended without exit status"),
    ("The connection to box ended: builtins.OSError: timed out.", "The connection to box ended: timed out."),
    ("connect:gpu: paramiko.ssh_exception.SSHException: Error reading SSH protocol banner",
     "connect:gpu: Error reading SSH protocol banner"),
    ("gpu: TimeoutError: .", "gpu: ."),
    ("Connection refused by 10.0.0.1:22.", "Connection refused by 10.0.0.1:22."),
    ("Key error in the Error list: fine", "Key error in the Error list: fine"),
])
def test_type_names_go(raw: str, plain: str) -> None:
    assert without_exception_names(raw) == plain
    assert not shows_exception_name(plain)
