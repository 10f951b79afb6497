"""Software the truth workloads run that Debian does not package (a notebook server and kernel from PyPI, a
JavaScript dev server and VS Code's server from npm): installed once into a cache outside the repo, readable by the
throwaway test user, in a folder named for what it holds (a change of versions installs afresh beside the old one).

    WR_TRUTH_CACHE (default /var/cache/wr-truth)
      venv-<hash>/   /usr/bin/python3 -m venv + PYTHON_PACKAGES (pip; its bin/ joins the workloads' PATH)
      node-<hash>/   npm/package.json + package-lock.json, `npm ci --prefer-offline` (node_modules/.bin joins PATH)
      code-server-<hash>/  VS Code's server from the npm registry (tools/code_server_install.sh; its bin/ joins PATH)
      npm-cache/     npm's download cache, so a second install needs no network

A cache that cannot be made (no network on a fresh machine) leaves its tools missing: the workloads that need
them are skipped by name, as for a missing Debian package.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
NPM_PROJECT = HERE / "npm"
PYTHON_PACKAGES = ("jupyter_server==2.21.1", "ipykernel==7.4.0")
"""The notebook server and kernel (jupyter_server's REST API and kernel websocket, ipykernel's ZMQ kernel)."""
CODE_SERVER_INSTALL = HERE / "tools" / "code_server_install.sh"
TOOLS = {"jupyter-server": "python", "vite": "node", "code-server": "code-server"}
"""Tool name (as a workload's `# needs:` says it) -> the cache that has it."""


def root() -> Path:
    return Path(os.environ.get("WR_TRUTH_CACHE", "/var/cache/wr-truth"))


def _key(*parts: bytes) -> str:
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:12]


def _readable(path: Path) -> None:
    """Everyone may read and run what is in the cache (the test user runs it); nobody but root writes it."""
    subprocess.run(["chmod", "-R", "a+rX,go-w", str(path)], check=True, timeout=120)


def _python_env(base: Path, log: Path) -> Path | None:
    venv = base / f"venv-{_key(*(p.encode() for p in PYTHON_PACKAGES))}"
    if (venv / ".ready").exists():
        return venv / "bin"
    shutil.rmtree(venv, ignore_errors=True)
    with open(log, "ab") as out:
        ok = subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], stdout=out, stderr=out,
                            timeout=300).returncode == 0
        ok = ok and subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-input",
                                    *PYTHON_PACKAGES], stdout=out, stderr=out, timeout=900).returncode == 0
    if not ok:
        return None
    _readable(venv)
    (venv / ".ready").touch()
    return venv / "bin"


def _node_project(base: Path, log: Path) -> Path | None:
    manifest, lock = (NPM_PROJECT / "package.json").read_bytes(), (NPM_PROJECT / "package-lock.json").read_bytes()
    project = base / f"node-{_key(manifest, lock)}"
    if (project / ".ready").exists():
        return project / "node_modules" / ".bin"
    if shutil.which("npm") is None:
        return None
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    (project / "package.json").write_bytes(manifest)
    (project / "package-lock.json").write_bytes(lock)
    with open(log, "ab") as out:
        ok = subprocess.run(["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund", "--cache",
                             str(base / "npm-cache")], cwd=project, stdout=out, stderr=out,
                            timeout=900).returncode == 0
    if not ok:
        return None
    _readable(project)
    (project / ".ready").touch()
    return project / "node_modules" / ".bin"


def _code_server(base: Path, log: Path) -> Path | None:
    script = CODE_SERVER_INSTALL.read_bytes()
    prefix = base / f"code-server-{_key(script, os.environ.get('CODE_SERVER_VERSION', '').encode())}"
    if (prefix / ".ready").exists():
        return prefix / "bin"
    if shutil.which("npm") is None:
        return None
    shutil.rmtree(prefix, ignore_errors=True)
    with open(log, "ab") as out:
        ok = subprocess.run(["bash", str(CODE_SERVER_INSTALL), str(prefix)], stdout=out, stderr=out, timeout=1800,
                            env={**os.environ, "npm_config_cache": str(base / "npm-cache")}).returncode == 0
    if not ok:
        return None
    _readable(prefix)
    (prefix / ".ready").touch()
    return prefix / "bin"


def prepare(needs: set[str]) -> list[str]:
    """The bin folders (for the workloads' PATH) of every cache the needed tools come from, made if missing."""
    kinds = {TOOLS[n] for n in needs if n in TOOLS}
    if not kinds:
        return []
    base = root()
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)
    log = base / "install.log"
    with open(base / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install at a time (two CI tiers may start together)
        dirs = [_python_env(base, log) if "python" in kinds else None,
                _node_project(base, log) if "node" in kinds else None,
                _code_server(base, log) if "code-server" in kinds else None]
    return [str(d) for d in dirs if d is not None]
