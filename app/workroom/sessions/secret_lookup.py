"""Where a host's SSH passphrase or password comes from: the keyring, or the person through a face that can ask."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from workroom.core.questions import SecretRequest
from workroom.credentials import CredentialKey, CredentialStore

SecretAsker = Callable[[SecretRequest], Coroutine[Any, Any, str | None]]
"""Asks the user for a secret the keyring does not have (a coroutine run on the event loop)."""
ASK_SECRET_TIMEOUT_SECONDS = 300.0


class AsksSecrets(Protocol):
    """The engine, as a lookup sees it: the face's asker (if any) and the loop it runs on."""

    secret_asker: SecretAsker | None
    loop: asyncio.AbstractEventLoop | None


def keyring_secret_lookup(store: CredentialStore,
                          engine: AsksSecrets | None = None) -> Callable[[SecretRequest], str | None]:
    """SSH passphrases and passwords come only from the keyring (runs on the host's worker thread).

    Nothing stored: the face's `secret_asker` (the desktop app's passphrase dialog) is asked on the event
    loop, and the answer is kept in the keyring (a wrong one is deleted when the host refuses it); with no
    asker, None (the login fails saying a passphrase was needed; `workroom secret set` stores one). No usable
    keyring: its error is raised — never a plaintext fallback, and the answer is not used unsaved."""

    def lookup(request: SecretRequest) -> str | None:
        key = CredentialKey.of(request)
        stored = store.get(key)
        if stored is not None or engine is None or engine.secret_asker is None or engine.loop is None:
            return stored
        asked = asyncio.run_coroutine_threadsafe(engine.secret_asker(request), engine.loop)
        answer = asked.result(timeout=ASK_SECRET_TIMEOUT_SECONDS)
        if answer:
            store.set(key, answer)
        return answer or None

    return lookup
