"""The agent's state folder (its socket, lock, key and settings) is trusted only when nobody but this user could
have put anything in it: a real folder of this user's that nobody else can enter, under folders that pass the
launcher's rule (`unsafe_folder`: OpenSSH's safe_path), as the install folder must. A folder above it open to
a shared group let another user swap the whole folder, and their agent was then believed and its lock obeyed.

Checked by the probe, by the agent before it opens anything there, and by every step that reaches the socket
(the relay, the wait after a start, the replacement of a frozen agent, the uninstall, the command line's
client). Standard library only, Python 3.8: the app carries this file's text in its commands.
"""

import os
import stat

from wr_agent.launcher import unsafe_folder


def nearest(path):
    """`path`, or the nearest folder above it that exists."""
    while not os.path.lexists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def unsafe_state_folder(folder, missing_ok=False):
    """None when the state folder `folder` is safe (`missing_ok`: or absent, with a safe chain to be made in),
    else why not, in words."""
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
