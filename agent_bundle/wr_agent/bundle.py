"""The deterministic single-file zipapp and the build identity (its sha256).

Same sources -> same bytes: entries sorted, fixed timestamps and permissions, stored (not deflated, so
zlib versions cannot change the bytes), no __pycache__. The app builds its copy with
`python -m wr_agent bundle --out F`, so the hash it pushes is the hash the agent reports.
"""

import io
import os
import stat

try:  # the builtin SHA-256 (3.12+ / 3.8-3.11): OpenSSL's hashlib costs ~3.7 MB of resident memory
    from _sha2 import sha256 as _sha256  # type: ignore
except ImportError:
    try:
        from _sha256 import sha256 as _sha256  # type: ignore
    except ImportError:
        from hashlib import sha256 as _sha256

SHEBANG = b"#!/usr/bin/env python3\n"
SUFFIXES = (".py", ".in")
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
ROOT_MAIN = b"import sys\n\nfrom wr_agent.__main__ import entry\n\nsys.exit(entry())\n"
_build_cache = []


def package_dir():
    return os.path.dirname(os.path.abspath(__file__))


def running_archive():
    """Path of the zipapp this code runs from, or None when running from source."""
    loader = globals().get("__loader__")
    archive = getattr(loader, "archive", None)
    return archive if archive and os.path.isfile(archive) else None


def source_files(pkg_dir=None):
    pkg_dir = pkg_dir or package_dir()
    names = [n for n in os.listdir(pkg_dir)
             if n.endswith(SUFFIXES) and os.path.isfile(os.path.join(pkg_dir, n))]
    return sorted(names)


def bundle_bytes(pkg_dir=None):
    """The zipapp's bytes built from the package sources."""
    archive = running_archive() if pkg_dir is None else None
    if archive is not None:
        with open(archive, "rb") as f:
            return f.read()
    pkg_dir = pkg_dir or package_dir()
    entries = [("__main__.py", ROOT_MAIN)]
    for name in source_files(pkg_dir):
        with open(os.path.join(pkg_dir, name), "rb") as f:
            entries.append(("wr_agent/" + name, f.read()))
    buf = io.BytesIO()
    buf.write(SHEBANG)
    import zipfile  # here, not at the top: a serving agent never builds a bundle, and zipfile pulls in pathlib,
    # shutil, bz2, lzma, urllib.parse and ipaddress (about 1 MB resident)

    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name, data in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
            info.compress_type = zipfile.ZIP_STORED
            info.create_system = 3
            info.external_attr = 0o100644 << 16
            zf.writestr(info, data)
    return buf.getvalue()


def sha256_file(path, limit=64 << 20):
    h = _sha256()
    size = 0
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not block us
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError("%s is not a regular file" % path)
    with os.fdopen(fd, "rb") as f:
        while True:
            chunk = f.read(1 << 16)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise ValueError("%s is larger than %d bytes" % (path, limit))
            h.update(chunk)
    return h.hexdigest()


def build_hash():
    """sha256 of the running zipapp, or of the bundle these sources would build."""
    if not _build_cache:
        _build_cache.append(_sha256(bundle_bytes()).hexdigest())
    return _build_cache[0]


def write_bundle(out):
    """Write the zipapp atomically (mode 0755) and return its sha256."""
    data = bundle_bytes()
    out_dir = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(out_dir):
        os.makedirs(out_dir)
    tmp = "%s.tmp.%d" % (out, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o755)
    with os.fdopen(fd, "wb") as f:
        os.fchmod(fd, 0o755)
        f.write(data)
        f.flush()
        os.fsync(fd)
    os.rename(tmp, out)
    return _sha256(data).hexdigest()
