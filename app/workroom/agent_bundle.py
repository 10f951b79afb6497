"""The agent this app pushes (`AgentBundle`): found the same way in development and when frozen, hashed,
and its version read.

Frozen (PyInstaller): the build put `wr-agent.pyz` among the app's files (`paths.frozen_data_dir()`); it is
read as is. Development or an installed wheel: the agent's own `python -m wr_agent bundle --out F` builds it
from `agent_bundle/wr_agent` (checkout) or `workroom/_agent_src/wr_agent` (wheel), in a child process, so the
app never imports agent code and the bytes are exactly what the agent's deterministic builder makes. The
result is cached under the app's cache dir, keyed by a digest of the agent's sources.

Either way the sha256 is computed here from the bytes, never taken on trust; it is the agent's identity
(push by hash, docs/architecture.md). The version is read from the zipapp's `wr_agent/__init__.py`.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from workroom.core.errors import UserError
from workroom.paths import AppPaths, app_paths, frozen_data_dir
from workroom.regular_file import NotARegularFileError, read_regular_file

BUNDLE_NAME = "wr-agent.pyz"
BUILD_TIMEOUT_S = 60.0
_HEX64 = re.compile(r"\b[0-9a-f]{64}\b")
_VERSION = re.compile(rb"""__version__\s*=\s*["']([^"']+)["']""")


class AgentBundleError(RuntimeError):
    """The agent bundle could not be found, built or read; the message says where and why."""


@dataclass(frozen=True)
class AgentBundle:
    """The agent this app ships: its bytes, their sha256 (its identity), its version, and the file it
    was read from (None for a bundle made in memory)."""

    data: bytes
    sha256: str
    version: str
    path: Path | None = None

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return version_tuple(self.version)

    def launcher_source(self) -> str:
        """The agent's launcher (`wr_agent/launcher.py`), read from these bytes: the checks the host runs
        before it runs the bundle, carried on the command line (docs/security.md)."""
        return self.module_source("wr_agent.launcher", "launcher")

    def module_source(self, module: str, what: str = "module") -> str:
        """One module's text (`wr_agent.relay` -> `wr_agent/relay.py`, a package -> its `__init__.py`), read from
        these bytes: what a command carries to the host instead of running it from the installed file."""
        name = module.replace(".", "/")
        try:
            with zipfile.ZipFile(io.BytesIO(self.data)) as archive:
                names = set(archive.namelist())
                path = f"{name}/__init__.py" if f"{name}/__init__.py" in names else f"{name}.py"
                return archive.read(path).decode("utf-8")
        except (zipfile.BadZipFile, KeyError, UnicodeDecodeError) as error:
            raise AgentBundleError(f"the agent bundle is damaged: it has no {what} ({error})") from None

    def __repr__(self) -> str:  # keep the bytes out of logs
        where = str(self.path) if self.path is not None else None
        return f"AgentBundle(path={where!r}, size={len(self.data)}, sha256={self.sha256!r}, version={self.version!r})"


def version_tuple(text: str) -> tuple[int, ...]:
    """`"0.4.1"` (or `"wr-agent 0.4.1 ..."`) -> (0, 4, 1); () when there is no dotted number."""
    match = re.search(r"(\d+(?:\.\d+)+)", text)
    return tuple(int(p) for p in match.group(1).split(".")) if match else ()


def bundle_version(data: bytes) -> str:
    """The agent's version, read from the zipapp's wr_agent/__init__.py (never imported here)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            match = _VERSION.search(archive.read("wr_agent/__init__.py"))
    except (zipfile.BadZipFile, KeyError) as error:
        raise AgentBundleError(f"the agent bundle is damaged: cannot read its version ({error})") from None
    if match is None:
        raise AgentBundleError("the agent bundle is damaged: it does not say its version")
    return match.group(1).decode()


def load_agent_bundle(paths: AppPaths) -> AgentBundle:
    """The bundle for the app and the CLI; a missing or damaged one is a `UserError` saying what to do."""
    try:
        return locate_agent_bundle(paths.cache_dir)
    except AgentBundleError as error:
        raise UserError("No agent to push", str(error), "Reinstall the app, or run ./dev setup.") from None


def agent_source_root() -> Path:
    """The directory that holds the `wr_agent` package (what goes on the builder's PYTHONPATH)."""
    here = Path(__file__).resolve().parent
    candidates = [here / "_agent_src", here.parent.parent / "agent_bundle"]
    for root in candidates:
        if (root / "wr_agent" / "__init__.py").is_file():
            return root
    looked = ", ".join(str(c) for c in candidates)
    raise AgentBundleError(f"agent sources (wr_agent/) not found (looked in: {looked})")


def source_digest(source_root: Path) -> str:
    """sha256 over every file of the wr_agent package (names and bytes), ignoring bytecode caches."""
    pkg = source_root / "wr_agent"
    h = hashlib.sha256()
    files = sorted(p for p in pkg.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")
    for path in files:
        rel = path.relative_to(pkg).as_posix().encode()
        data = path.read_bytes()
        h.update(len(rel).to_bytes(4, "big") + rel + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def default_cache_dir() -> Path:
    """The app's cache dir (honours WORKROOM_HOME via workroom.paths), `agent/` under it."""
    return app_paths().cache_dir / "agent"


def _read(path: Path) -> AgentBundle:
    try:
        data = read_regular_file(path, None)  # never waits on a FIFO in the bundle's place
    except NotARegularFileError:
        raise AgentBundleError(f"the agent bundle {path} is damaged: it is not a regular file "
                               "(a FIFO, device or socket is in its place)") from None
    except OSError as exc:
        raise AgentBundleError(f"cannot read the agent bundle {path}: {exc}") from None
    if not data:
        raise AgentBundleError(f"the agent bundle {path} is empty")
    return AgentBundle(data=data, sha256=hashlib.sha256(data).hexdigest(), version=bundle_version(data), path=path)


def build_bundle(source_root: Path, out: Path, python: str | None = None) -> str:
    """Run the agent's own builder in a child process; returns the sha256 it printed (or "")."""
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(source_root)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # an installed wheel's site-packages may be read-only
    cmd = [python or sys.executable, "-m", "wr_agent", "bundle", "--out", str(out)]
    try:
        proc = subprocess.run(
            cmd, env=env, cwd=out.parent, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise AgentBundleError(f"building the agent bundle took over {BUILD_TIMEOUT_S:.0f} s: {cmd}") from None
    except OSError as exc:
        raise AgentBundleError(f"cannot run the agent bundle builder {cmd[0]}: {exc}") from None
    if proc.returncode != 0 or not out.is_file():
        detail = (proc.stderr or proc.stdout).strip()[-2000:]
        raise AgentBundleError(
            f"`{' '.join(cmd)}` (PYTHONPATH={source_root}) failed with exit {proc.returncode}: {detail}"
        )
    found = _HEX64.findall(proc.stdout)
    return found[-1] if found else ""


def locate_agent_bundle(cache_dir: Path | None = None, *, frozen_dir: Path | None = None) -> AgentBundle:
    """The agent bundle: path, bytes, real sha256 and version.

    `frozen_dir` (default: the frozen app's data dir) holds a packaged wr-agent.pyz; otherwise the bundle is
    built from the sources into `cache_dir` (default: the app's cache dir) once per source digest.
    """
    frozen = frozen_dir if frozen_dir is not None else frozen_data_dir()
    if frozen is not None:
        path = frozen / BUNDLE_NAME
        if not os.path.lexists(path):  # anything else in its place is read, and reported as damaged
            raise AgentBundleError(f"the packaged agent bundle is missing: {path}")
        return _read(path)

    source_root = agent_source_root()
    cache = cache_dir if cache_dir is not None else default_cache_dir()
    target = cache / f"wr-agent-{source_digest(source_root)[:20]}.pyz"
    if not target.is_file():
        printed = build_bundle(source_root, target)
        bundle = _read(target)
        if printed and printed != bundle.sha256:
            target.unlink(missing_ok=True)
            raise AgentBundleError(
                f"the agent builder printed sha256 {printed} but wrote bytes hashing to {bundle.sha256}"
            )
        return bundle
    return _read(target)
