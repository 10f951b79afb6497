"""Build the desktop app with PyInstaller: Workroom.app on macOS, a one-folder build on Linux.

Steps: (1) the agent zipapp, made by the agent's own deterministic builder (`python -m wr_agent bundle`,
the same code the app runs in development, so the frozen app pushes the same sha256); (2) Info.plist from
Info.plist.in; (3) on macOS an .icns from resources/icons/app (iconutil); (4) PyInstaller on
build/workroom.spec. PyInstaller is a build tool, not a dependency: `pip install pyinstaller` first.

    python build/build_app.py [--dist DIR] [--work DIR]
Prints the path of the result, the agent's sha256, the build time and the size.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "out"
sys.path.insert(0, str(ROOT / "app"))
sys.path.insert(0, str(ROOT / "build"))

from render_plist import render_file  # noqa: E402
from workroom.agent_bundle import build_bundle, locate_agent_bundle  # noqa: E402


def tree_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def make_icns(work: Path) -> Path | None:
    """Workroom.icns from the committed PNGs, with sips + iconutil (macOS only; None elsewhere)."""
    if sys.platform != "darwin" or not shutil.which("iconutil") or not shutil.which("sips"):
        return None
    iconset = work / "Workroom.iconset"
    shutil.rmtree(iconset, ignore_errors=True)
    iconset.mkdir(parents=True)
    source = ROOT / "resources" / "icons" / "app" / "workroom-512.png"
    for size in (16, 32, 128, 256, 512):
        for scale in (1, 2):
            pixels = size * scale
            if pixels > 512:
                continue  # no 1024 px master; iconutil accepts the set without it
            name = f"icon_{size}x{size}{'@2x' if scale == 2 else ''}.png"
            subprocess.run(
                ["sips", "-z", str(pixels), str(pixels), str(source), "--out", str(iconset / name)],
                check=True,
                capture_output=True,
            )
    icns = work / "Workroom.icns"
    subprocess.run(["iconutil", "-c", "icns", str(iconset), "-o", str(icns)], check=True)
    return icns


TARGET_ARCHS = ("universal2", "arm64", "x86_64")


def python_archs(executable: str = sys.executable) -> set[str]:
    """The CPU architectures in this Python's binary (macOS: `lipo -archs`); empty when it cannot be told."""
    if sys.platform != "darwin" or not shutil.which("lipo"):
        return set()
    out = subprocess.run(["lipo", "-archs", os.path.realpath(executable)], capture_output=True, text=True)
    return set(out.stdout.split()) if out.returncode == 0 else set()


def default_target_arch(archs: set[str]) -> str | None:
    """universal2 when the Python is universal (the app then runs on Intel and Apple silicon), else native."""
    return "universal2" if {"arm64", "x86_64"} <= archs else None


def build(dist: Path, work: Path, target_arch: str | None = None) -> Path:
    if importlib.util.find_spec("PyInstaller") is None:
        raise SystemExit("PyInstaller is not installed: run `python -m pip install pyinstaller` (a build tool only)")
    work.mkdir(parents=True, exist_ok=True)
    agent_pyz = work / "wr-agent.pyz"
    agent_pyz.unlink(missing_ok=True)
    build_bundle(ROOT / "agent_bundle", agent_pyz)
    agent = locate_agent_bundle(frozen_dir=work)  # reads it back and hashes the bytes
    print(f"agent bundle: {agent.path} sha256 {agent.sha256}")

    env = dict(os.environ)
    env["WORKROOM_AGENT_PYZ"] = str(agent_pyz)
    plist = work / "Info.plist"
    render_file(plist)
    env["WORKROOM_INFO_PLIST"] = str(plist)
    icns = make_icns(work)
    if icns is not None:
        env["WORKROOM_ICNS"] = str(icns)
    if target_arch is not None:
        env["WORKROOM_TARGET_ARCH"] = target_arch
        print(f"target arch: {target_arch}")

    cmd = [
        sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "--log-level", "WARN",
        "--distpath", str(dist), "--workpath", str(work / "pyinstaller"),
        str(ROOT / "build" / "workroom.spec"),
    ]  # fmt: skip
    subprocess.run(cmd, env=env, check=True, cwd=ROOT)
    return dist / ("Workroom.app" if sys.platform == "darwin" else "workroom-app")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build Workroom.app (macOS) or the one-folder app (Linux).")
    parser.add_argument("--dist", type=Path, default=OUT / "dist")
    parser.add_argument("--work", type=Path, default=OUT / "work")
    parser.add_argument("--target-arch", choices=TARGET_ARCHS, default=None,
                        help="macOS only; default universal2 when this Python is universal, else native")
    args = parser.parse_args(argv)
    target_arch = args.target_arch or default_target_arch(python_archs())
    if target_arch is not None and sys.platform != "darwin":
        parser.error("--target-arch is for macOS builds only")
    if target_arch == "universal2" and not {"arm64", "x86_64"} <= python_archs():
        parser.error("--target-arch universal2 needs a universal2 Python (python.org's installer gives one)")
    started = time.monotonic()
    result = build(args.dist.resolve(), args.work.resolve(), target_arch)
    elapsed = time.monotonic() - started
    print(f"built {result} in {elapsed:.1f} s, {tree_size(result) / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
