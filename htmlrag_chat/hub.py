"""Finding models and tokenizers: a local path, the local Hugging Face cache, or the hub.

transformers retries an unreachable hub for about 45 seconds before failing, so we look in
the local cache first and only go online after a quick check that the hub answers at all.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from htmlrag_chat.errors import UserError

T = TypeVar("T")

_DEFAULT_ENDPOINT = "https://huggingface.co"
_OFFLINE_VALUES = {"1", "true", "yes", "on"}


class ModelUnavailable(UserError):
    """A model or tokenizer that cannot be loaded here (not cached, offline, gated)."""


def hub_reachable(timeout: float = 2.0) -> bool:
    """Whether the Hugging Face hub accepts a TCP connection (False when HF_HUB_OFFLINE)."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in _OFFLINE_VALUES:
        return False
    endpoint = urlsplit(os.environ.get("HF_ENDPOINT", _DEFAULT_ENDPOINT))
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        socket.create_connection((endpoint.hostname or "", port), timeout=timeout).close()
    except OSError:
        return False
    return True


def load_pretrained(
    load: Callable[..., T], name: str, *, local_only: bool = False, **kwargs: object
) -> T:
    """Call a ``from_pretrained``-style ``load`` for a path or hub id, failing fast offline.

    ``local_only`` never downloads (``--reader auto`` must not start a 16 GB download)."""
    path = Path(name).expanduser()
    try:
        if path.exists():
            return load(str(path), **kwargs)
        try:
            return load(name, local_files_only=True, **kwargs)
        except (OSError, ValueError):
            pass
        if local_only or not hub_reachable():
            where = "downloads are off here" if local_only else "the hub is unreachable"
            raise ModelUnavailable(
                f"{name}: not a local path, not in the Hugging Face cache, and {where}"
            )
        return load(name, **kwargs)
    except (OSError, ValueError) as error:
        lines = str(error).strip().splitlines()
        reason = lines[0] if lines else type(error).__name__
        raise ModelUnavailable(f"{name}: cannot be loaded ({reason})") from error
