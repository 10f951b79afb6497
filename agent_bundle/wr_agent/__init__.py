"""wr-agent: the far-side agent of Workroom companion (stdlib only, Python 3.8+).

It decides BUSY or IDLE from /proc, applies the awake ceiling, keeps a network-metered box awake with a
heartbeat while busy, and reports to the app over a Unix socket (see docs/protocol.md).
"""

__version__ = "0.1.0"
VERSION = __version__
PROTOCOL = 1
