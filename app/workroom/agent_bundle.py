"""The agent this app pushes: located (dev build or packaged file), hashed, and its version read."""

from __future__ import annotations

import io
import re
import zipfile

from workroom.agent_bundle_locator import locate_agent_bundle
from workroom.core.errors import UserError
from workroom.paths import AppPaths
from workroom.remote.agent_install import AgentBundle

_VERSION = re.compile(rb"""__version__\s*=\s*["']([^"']+)["']""")


def bundle_version(data: bytes) -> str:
    """The agent's version, read from the zipapp's wr_agent/__init__.py (never imported here)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            match = _VERSION.search(archive.read("wr_agent/__init__.py"))
    except (zipfile.BadZipFile, KeyError) as error:
        raise UserError("The agent bundle is damaged", f"Cannot read its version: {error}.",
                        "Reinstall the app.") from None
    if match is None:
        raise UserError("The agent bundle is damaged", "It does not say its version.", "Reinstall the app.")
    return match.group(1).decode()


def load_agent_bundle(paths: AppPaths) -> AgentBundle:
    from workroom.agent_bundle_locator import AgentBundleError

    try:
        located = locate_agent_bundle(paths.cache_dir)
    except AgentBundleError as error:
        raise UserError("No agent to push", str(error), "Reinstall the app, or run ./dev setup.") from None
    return AgentBundle(data=located.data, sha256=located.sha256, version=bundle_version(located.data))
