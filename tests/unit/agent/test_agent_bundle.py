"""The deterministic zipapp: same sources -> same bytes, and the running zipapp reports its own hash."""

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile

import pytest
from wr_agent import bundle

pytestmark = pytest.mark.unit
PY38 = os.path.expanduser("~/.pyenv/versions/3.8.18/bin/python3")


def test_two_builds_are_identical_and_well_formed(tmp_path):
    a, b = bundle.bundle_bytes(), bundle.bundle_bytes()
    assert a == b and a.startswith(bundle.SHEBANG)
    out = tmp_path / "x.pyz"
    out.write_bytes(a)
    with zipfile.ZipFile(str(out)) as zf:
        names = zf.namelist()
        assert names == sorted(names) and "__main__.py" in names and "wr_agent/cli.py" in names
        assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
        assert all(i.date_time == (1980, 1, 1, 0, 0, 0) and (i.external_attr >> 16) == 0o100644
                   for i in zf.infolist())


def test_copy_of_sources_builds_the_same_bytes_and_changes_change_it(tmp_path):
    pkg = tmp_path / "wr_agent"
    shutil.copytree(bundle.package_dir(), str(pkg))
    (pkg / "__pycache__").mkdir(exist_ok=True)
    (pkg / "__pycache__" / "junk.pyc").write_bytes(b"junk")
    os.utime(str(pkg / "cli.py"), (1, 1))
    assert bundle.bundle_bytes(str(pkg)) == bundle.bundle_bytes()
    with open(str(pkg / "__init__.py"), "a") as f:
        f.write("# changed\n")
    assert bundle.bundle_bytes(str(pkg)) != bundle.bundle_bytes()


def test_cli_bundle_and_version_from_zipapp(tmp_path):
    out = tmp_path / "wr-agent.pyz"
    env = dict(os.environ, PYTHONPATH=os.path.dirname(bundle.package_dir()))
    r = subprocess.run([sys.executable, "-m", "wr_agent", "bundle", "--out", str(out)], env=env,
                       capture_output=True, text=True, timeout=30, check=True)
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    assert r.stdout.strip() == digest
    clean = dict(os.environ)
    clean.pop("PYTHONPATH", None)
    v = subprocess.run([sys.executable, str(out), "--version"], env=clean, cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=30, check=True)
    assert v.stdout.split() == ["wr-agent", "0.1.0", "protocol", "1", "build", digest]
    src = subprocess.run([sys.executable, "-m", "wr_agent", "--version"], env=env,
                         capture_output=True, text=True, timeout=30, check=True)
    assert src.stdout == v.stdout


@pytest.mark.skipif(not os.path.exists(PY38), reason="Python 3.8 not installed here")
def test_python38_builds_the_same_bytes_and_runs(tmp_path):
    out = tmp_path / "a.pyz"
    env = dict(os.environ, PYTHONPATH=os.path.dirname(bundle.package_dir()))
    subprocess.run([PY38, "-m", "wr_agent", "bundle", "--out", str(out)], env=env, check=True,
                   capture_output=True, timeout=30)
    assert out.read_bytes() == bundle.bundle_bytes()
    subprocess.run([PY38, "-m", "compileall", "-q", bundle.package_dir()], check=True, timeout=60,
                   capture_output=True)


def test_sha256_file_refuses_non_regular_files(tmp_path):
    with pytest.raises(ValueError):
        bundle.sha256_file(str(tmp_path))
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    with pytest.raises(ValueError):  # must not block on a pipe nobody writes to
        bundle.sha256_file(str(fifo))
    f = tmp_path / "f"
    f.write_bytes(b"abc")
    assert bundle.sha256_file(str(f)) == hashlib.sha256(b"abc").hexdigest()


def test_the_relay_starts_without_the_parser_and_the_rest_of_the_agent(tmp_path):
    """`relay --socket PATH` (every connect over SSH runs it) imports only the relay; it fails as before."""
    out = tmp_path / "wr-agent.pyz"
    bundle.write_bundle(str(out))
    missing = str(tmp_path / "no-agent.sock")
    relay = subprocess.run([sys.executable, "-X", "importtime", str(out), "relay", "--socket", missing],
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    imported = {line.rsplit("|", 1)[-1].strip() for line in relay.stderr.splitlines() if "import time" in line}
    assert "wr_agent.relay" in imported
    assert not imported & {"argparse", "wr_agent.cli", "wr_agent.runtime", "wr_agent.client", "logging"}
    assert relay.returncode == 1
    assert f"wr-agent: no wr-agent answers on {missing}" in relay.stderr
    other = subprocess.run([sys.executable, str(out), "relay", "--socket"], capture_output=True, text=True,
                           timeout=60)
    assert other.returncode == 2 and "usage" in other.stderr  # anything else: the full command line, as ever
