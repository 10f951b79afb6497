"""`python3 -m wr_agent ...` and the zipapp's entry point."""

import sys


def entry():
    """`relay --socket PATH`, what the app runs on every connect over SSH, starts without the parser and the
    rest of the agent; anything else goes to the full command line."""
    from wr_agent import relay

    code = relay.main(sys.argv[1:])
    if code is None:
        from wr_agent.cli import main

        code = main()
    return code


if __name__ == "__main__":
    sys.exit(entry())
