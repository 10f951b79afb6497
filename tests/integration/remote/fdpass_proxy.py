"""A ProxyCommand in the style of OrbStack's helper (ProxyUseFdpass): connect to host:port, pass the
connected socket back over stdout (SCM_RIGHTS), exit. Usage: python fdpass_proxy.py HOST PORT"""

import socket
import sys

conn = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
back = socket.socket(fileno=1)
socket.send_fds(back, [b"\0"], [conn.fileno()])
