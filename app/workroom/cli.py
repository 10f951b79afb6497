"""The `workroom` command line: the engine, headless."""

from __future__ import annotations

import argparse
import sys

from workroom import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="workroom", description="Workroom companion, headless.")
    parser.add_argument("--version", action="version", version=f"workroom {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    parser.parse_args(argv)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
