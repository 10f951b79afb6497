"""The installer's last step of a push: check the uploaded bundle's sha256 on the host, then put it in place.

`install_place STAGED FINAL SHA256`: the upload went to a staged file (mode 0600) beside the install path;
only when its bytes hash to SHA256 is it renamed over FINAL (one rename: the installed bundle is never a
partial one). Otherwise it is deleted and the step fails in words (exit 1). The app carries this file's text
in its command, from its own bundle (remote/host_python.py).
"""

import hashlib
import os
import sys


def place(staged, final, expected):
    """None when `staged` hashed to `expected` and now is `final`; else why not (and `staged` is gone)."""
    with open(staged, "rb") as f:
        got = hashlib.sha256(f.read()).hexdigest()
    if got != expected:
        os.unlink(staged)
        return "sha256 mismatch: uploaded %s, expected %s; the partial upload was deleted" % (got, expected)
    os.replace(staged, final)
    return None


def main(argv):
    """`STAGED FINAL SHA256`."""
    staged, final = os.path.expanduser(argv[0]), os.path.expanduser(argv[1])
    why = place(staged, final, argv[2])
    if why:
        sys.stderr.write(why + "\n")
        return 1
    return 0
