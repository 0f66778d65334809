"""Finding models and tokenizers: a local path, the local Hugging Face cache, or the hub.

transformers retries an unreachable hub for about 45 seconds before failing, so we look in
the local cache first and only go online after a quick check that the hub answers at all.
``download`` (``htmlrag-chat models pull``) makes the same check before it starts.
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from htmlrag_chat.base.errors import EXIT_NETWORK, ModelUnavailable, UserError
from htmlrag_chat.base.paths import expand_user

T = TypeVar("T")

_DEFAULT_ENDPOINT = "https://huggingface.co"
_OFFLINE_VALUES = {"1", "true", "yes", "on"}
# What a reader or pruner needs of a repo; the rest are other formats of the same weights
# (Llama's original/ folder alone is 16 GB).
_NOT_NEEDED = [
    "original/*", "*.pth", "*.gguf", "*.onnx", "onnx/*", "openvino/*", "coreml/*",
    "*.msgpack", "*.h5", "*.ot", "flax_model*", "tf_model*", "rust_model*",
]  # fmt: skip
_TOKENIZER_FILES = ["tokenizer*", "special_tokens_map.json", "vocab*", "merges.txt", "*.model"]
_WEIGHTS = (".safetensors", ".bin")
# A snapshot in the cache holds a model, a tokenizer, or both.
_SNAPSHOT_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "tokenizer.model")


class HubUnreachable(UserError):
    """The hub cannot be reached for a download (offline, HF_HUB_OFFLINE, a dropped link)."""

    exit_code = EXIT_NETWORK


def hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", _DEFAULT_ENDPOINT).rstrip("/")


def hub_reachable(timeout: float = 2.0) -> bool:
    """Whether the Hugging Face hub accepts a TCP connection (False when HF_HUB_OFFLINE)."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in _OFFLINE_VALUES:
        return False
    endpoint = urlsplit(hub_endpoint())
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
    path = expand_user(name)
    try:
        if path.exists():
            return load(str(path), **kwargs)
        try:
            return load(name, local_files_only=True, **kwargs)
        except (OSError, ValueError):
            pass
        if local_only or not hub_reachable():
            raise _nowhere(name, local_only)
        return load(name, **kwargs)
    except (OSError, ValueError) as error:
        lines = str(error).strip().splitlines()
        reason = lines[0] if lines else type(error).__name__
        raise ModelUnavailable(f"{name}: cannot be loaded ({reason})") from error


def check_obtainable(name: str, local_only: bool = False) -> None:
    """Raise the ``ModelUnavailable`` that ``load_pretrained`` would for a model that is no
    local path, not in the cache, and cannot be downloaded, without importing torch or
    transformers (seconds that a missing model is not worth)."""
    problems = unobtainable({name: local_only})
    if name in problems:
        raise problems[name]


def unobtainable(models: Mapping[str, bool]) -> dict[str, ModelUnavailable]:
    """Of ``models`` (a hub id or path, and whether only what is here will do), those that
    ``load_pretrained`` could not load, each with why: every model a plan names, looked up
    in one pass that asks the hub at most once (offline, each ask costs its timeout)."""
    reachable = functools.cache(hub_reachable)  # asked only when a model is not here
    problems = {}
    for name, local_only in models.items():
        if (wrong := not_a_model(name)) is not None:
            problems[name] = wrong
            continue
        if expand_user(name).exists() or cached_snapshot(name) is not None:
            continue
        if local_only or not reachable():
            problems[name] = _nowhere(name, local_only)
    return problems


def not_a_model(name: str, gguf: bool = False) -> ModelUnavailable | None:
    """A file named where a model goes (``--model README.md``): said as such before any
    library reads it as one (transformers asks for torch first, then fails on its JSON).
    A model is a folder with its configuration and weights, a hub id, or where ``gguf``
    allows it, a ``.gguf`` file."""
    path = Path(name).expanduser()
    if not path.is_file() or (gguf and path.suffix.lower() == ".gguf"):
        return None
    kinds = "neither a GGUF file (.gguf) nor a model folder" if gguf else "not a model folder"
    return ModelUnavailable(f"{name} is a file, {kinds} (config.json and weights)")


def _nowhere(name: str, local_only: bool) -> ModelUnavailable:
    if is_path(name):  # never a hub id: the hub is beside the point
        return ModelUnavailable(f"{name}: no such file or folder")
    where = "downloads are off here" if local_only else "the hub is unreachable"
    return ModelUnavailable(f"{name}: not a local path, not in the Hugging Face cache, and {where}")


def is_path(name: str) -> bool:
    """A model named as a path (``/models/x``, ``./x``, ``~/x``, ``C:\\x``), which no hub id
    (``owner/name``) looks like."""
    return (
        name.startswith(("/", ".", "~", "\\"))
        or name.count("/") > 1
        or "\\" in name
        or (name[:1].isalpha() and name[1:3] in (":/", ":\\"))
    )


def cached_snapshot(name: str, cache_dir: Path | None = None) -> Path | None:
    """The cached snapshot folder of hub id ``name`` (its ``main``), or None."""
    from huggingface_hub import try_to_load_from_cache

    for filename in _SNAPSHOT_FILES:
        try:
            found = try_to_load_from_cache(name, filename, cache_dir=cache_dir)
        except ValueError:  # not a valid hub id
            return None
        if isinstance(found, str):
            return Path(found).parent
    return None


def cached_file(repo_id: str, filename: str, cache_dir: Path | None = None) -> Path | None:
    """One file of a hub repo in the local cache (a pulled GGUF quant), or None."""
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir)
    except ValueError:
        return None
    return Path(found) if isinstance(found, str) else None


def located_model(name: str, cache_dir: Path | None = None) -> Path | None:
    """The folder ``name`` loads from here: itself, or its snapshot in the cache."""
    path = expand_user(name)
    return path if path.is_dir() else cached_snapshot(name, cache_dir)


def complete_model(folder: Path) -> bool:
    """A model folder with its configuration and weights (a snapshot may hold only a
    tokenizer)."""
    return (folder / "config.json").is_file() and any(
        file.suffix in _WEIGHTS for file in folder.iterdir()
    )


def require_hub() -> None:
    """Fail in one line, before any download starts, when the hub cannot be reached."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in _OFFLINE_VALUES:
        raise HubUnreachable("HF_HUB_OFFLINE is set, so nothing can be downloaded")
    if not hub_reachable():
        raise HubUnreachable(f"cannot reach the Hugging Face hub at {hub_endpoint()} (offline?)")


def download(repo_id: str, tokenizer_only: bool = False) -> Path:
    """Download ``repo_id`` into the Hugging Face cache with a progress bar on stderr, and
    return its folder: the weights in one format (safetensors when there are any) and the
    configuration, or only the tokenizer's files. Every failure is one line: gated and
    unknown repos say what to do, network failures raise ``HubUnreachable`` (exit 5)."""
    from huggingface_hub import HfApi, snapshot_download

    require_hub()
    kwargs: dict = {"endpoint": hub_endpoint()}
    if tokenizer_only:
        kwargs["allow_patterns"] = _TOKENIZER_FILES
    else:
        info = _call(repo_id, lambda: HfApi(endpoint=hub_endpoint()).model_info(repo_id))
        names = [sibling.rfilename for sibling in info.siblings or ()]
        safetensors = any(name.endswith(".safetensors") for name in names)
        kwargs["ignore_patterns"] = _NOT_NEEDED + (["*.bin", "*.pt"] if safetensors else [])
    return Path(_call(repo_id, lambda: snapshot_download(repo_id, **kwargs)))


def download_file(repo_id: str, filename: str) -> Path:
    """Download one file of ``repo_id`` (a GGUF quant: its repo holds a dozen others of
    5-16 GB each) into the Hugging Face cache, with the same one-line errors as
    ``download``; returns its path."""
    from huggingface_hub import hf_hub_download

    require_hub()
    return Path(_call(repo_id, lambda: hf_hub_download(repo_id, filename, endpoint=hub_endpoint())))


def _call(repo_id: str, run: Callable[[], T]) -> T:
    """``run`` with the hub's exceptions turned into one-line errors."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
    )

    page = f"{hub_endpoint()}/{repo_id}"
    try:
        return run()
    except GatedRepoError:
        raise ModelUnavailable(
            f"{repo_id} is gated: accept its licence at {page} (logged in), then run "
            "`hf auth login` here (or set HF_TOKEN) and pull again"
        ) from None
    except RepositoryNotFoundError:
        raise ModelUnavailable(
            f"{repo_id}: no such model on the hub (a private one needs `hf auth login`)"
        ) from None
    except HfHubHTTPError as error:
        status = error.response.status_code if error.response is not None else "?"
        if status == 401:
            raise ModelUnavailable(
                f"{repo_id}: the hub refused the login token (`hf auth login` again)"
            ) from None
        raise HubUnreachable(f"{repo_id}: the hub answered HTTP {status}") from None
    except (LocalEntryNotFoundError, OSError) as error:
        raise HubUnreachable(f"{repo_id}: the download failed: {_first_line(error)}") from None
    except ValueError as error:  # an id that is not owner/name
        raise ModelUnavailable(f"{repo_id}: {_first_line(error)}") from None
    except Exception as error:
        # A connection lost mid-download surfaces as the hub client's own HTTP library's
        # error (httpx, or httpx2 in huggingface_hub 2), which is no OSError.
        if type(error).__module__.partition(".")[0] not in ("httpx", "httpx2"):
            raise
        raise HubUnreachable(f"{repo_id}: the download failed: {_first_line(error)}") from None


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__
