"""Run a command whose standard input reaches it at RATE bytes a second (a slow disk or link on the far side),
its output untouched: `--rsync-path="python3 trickle.py 2000 -- rsync"` makes the remote rsync a slow receiver.

    trickle.py RATE -- COMMAND [ARGS...]
"""

import os
import subprocess
import sys
import threading
import time


def main():
    rate = int(sys.argv[1])
    argv = sys.argv[sys.argv.index("--") + 1:]
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, bufsize=0)
    every = 0.25
    piece = max(1, int(rate * every))

    def pump():
        try:
            while True:
                data = os.read(0, piece)
                if not data:
                    break
                child.stdin.write(data)
                time.sleep(every)
        except OSError:
            pass
        finally:
            try:
                child.stdin.close()
            except OSError:
                pass

    threading.Thread(target=pump, daemon=True).start()
    sys.exit(child.wait())


if __name__ == "__main__":
    main()
