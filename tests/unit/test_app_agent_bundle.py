"""The app's agent bundle (workroom.agent_bundle): same bytes and a true sha256 in development and frozen,
built by the agent itself.

Marked integration although it lives in unit/: it runs the agent's builder as a real child process.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from workroom import agent_bundle as loc
from workroom.core.errors import UserError
from workroom.paths import app_paths

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_same_sha256_twice_and_equal_to_the_file_hash(tmp_path: Path) -> None:
    first = loc.locate_agent_bundle(tmp_path)
    mtime = first.path.stat().st_mtime_ns
    second = loc.locate_agent_bundle(tmp_path)
    assert first.sha256 == second.sha256 == hashlib.sha256(first.path.read_bytes()).hexdigest()
    assert first.data == second.data == first.path.read_bytes()
    assert first.path == second.path and first.path.parent == tmp_path
    assert second.path.stat().st_mtime_ns == mtime, "the cached bundle was rebuilt"
    assert "data=" not in repr(first) and first.sha256 in repr(first)


def test_two_caches_get_identical_bytes(tmp_path: Path) -> None:
    """The agent's builder is deterministic, so the hash is an identity across machines and builds."""
    a = loc.locate_agent_bundle(tmp_path / "a")
    b = loc.locate_agent_bundle(tmp_path / "b")
    assert a.data == b.data and a.sha256 == b.sha256


def test_the_hash_is_the_one_the_agent_reports(tmp_path: Path) -> None:
    bundle = loc.locate_agent_bundle(tmp_path)
    out = subprocess.run(
        [sys.executable, str(bundle.path), "--version"], capture_output=True, text=True, timeout=30, check=True
    )
    assert bundle.sha256 in out.stdout, out.stdout


def _zipapp(version_line: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("wr_agent/__init__.py", version_line)
    return out.getvalue()


def test_frozen_dir_is_read_as_is(tmp_path: Path) -> None:
    """Frozen, the packaged file is taken as it is (no rebuild); its hash and version come from its bytes."""
    data = _zipapp(b'__version__ = "9.8.7"\n')
    (tmp_path / loc.BUNDLE_NAME).write_bytes(data)
    bundle = loc.locate_agent_bundle(frozen_dir=tmp_path)
    assert bundle.data == data and bundle.sha256 == hashlib.sha256(data).hexdigest()
    assert bundle.version == "9.8.7" and bundle.version_tuple == (9, 8, 7)
    assert bundle.path == tmp_path / loc.BUNDLE_NAME


@pytest.mark.parametrize("data", [b"PK not a zipapp", _zipapp(b"no version here\n")])
def test_a_damaged_bundle_is_a_user_error_saying_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     data: bytes) -> None:
    (tmp_path / loc.BUNDLE_NAME).write_bytes(data)
    with pytest.raises(loc.AgentBundleError, match="damaged"):
        loc.locate_agent_bundle(frozen_dir=tmp_path)
    monkeypatch.setattr(loc, "frozen_data_dir", lambda: tmp_path)
    with pytest.raises(UserError, match="No agent to push") as refused:
        loc.load_agent_bundle(app_paths({"WORKROOM_HOME": str(tmp_path / "home")}))
    assert "damaged" in refused.value.message and refused.value.hint


def test_frozen_without_the_packaged_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(loc.AgentBundleError, match=r"packaged agent bundle is missing: .*wr-agent\.pyz"):
        loc.locate_agent_bundle(frozen_dir=tmp_path)


def test_source_digest_follows_the_sources(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "agent_bundle" / "wr_agent", tmp_path / "wr_agent")
    before = loc.source_digest(tmp_path)
    (tmp_path / "wr_agent" / "__pycache__").mkdir(exist_ok=True)
    (tmp_path / "wr_agent" / "__pycache__" / "x.pyc").write_bytes(b"junk")
    assert loc.source_digest(tmp_path) == before
    with (tmp_path / "wr_agent" / "__init__.py").open("a") as f:
        f.write("# changed\n")
    assert loc.source_digest(tmp_path) != before


def test_a_failing_builder_is_reported_with_its_output(tmp_path: Path) -> None:
    pkg = tmp_path / "src" / "wr_agent"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text("import sys\nsys.exit('bundle: cannot write here')\n")
    with pytest.raises(loc.AgentBundleError, match="cannot write here"):
        loc.build_bundle(tmp_path / "src", tmp_path / "out" / "wr-agent.pyz")


def test_the_app_process_never_imports_the_agent(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from workroom.agent_bundle import locate_agent_bundle;"
        f"b = locate_agent_bundle(Path({str(tmp_path)!r}));"
        "assert 'wr_agent' not in sys.modules, 'wr_agent was imported';print(b.sha256)"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT / "app")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.strip()) == 64


def test_default_cache_dir_honours_workroom_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKROOM_HOME", str(tmp_path))
    assert loc.default_cache_dir().is_relative_to(tmp_path)
