"""The agent's state folder is trusted only when no other user could have put anything there (docs/agent.md, "The
state folder"). Carried in the app's commands: stdlib, Python 3.8."""

import os
import stat

from wr_agent.launcher import unsafe_folder


def nearest(path):
    """`path`, or the nearest folder above it that exists."""
    while not os.path.lexists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def unsafe_state_folder(folder, missing_ok=False):
    """None when `folder` (`missing_ok`: or where it would be made) is safe, else why not, in words."""
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        if not missing_ok:
            return "%s does not exist" % folder
        return unsafe_folder(nearest(os.path.dirname(folder)))
    except OSError as exc:
        return "%s cannot be checked (%s)" % (folder, exc.strerror or exc)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        return "%s is not a folder (a symbolic link or a file)" % folder
    if st.st_uid != os.getuid():
        return "%s belongs to uid %d, not to this user (uid %d)" % (folder, st.st_uid, os.getuid())
    if st.st_mode & 0o077:
        return "%s is open to other users (mode %o; run chmod 700 %s)" % (folder, stat.S_IMODE(st.st_mode), folder)
    return unsafe_folder(os.path.dirname(folder))
