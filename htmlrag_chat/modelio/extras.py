"""Optional packages: which extra installs each, and the one-line error when one is missing.

The core install answers on the CPU without torch (the embedding model runs in numpy, the
tokenizer in ``tokenizers``), so torch, transformers and sentence-transformers, with their
gigabytes of CUDA wheels on a default Linux resolution, are extras named for what they
enable (pyproject.toml): ``transformers`` for the local reader and the generative pruner,
``gpu`` for embeddings through sentence-transformers (a GPU, or a model numpy cannot run),
``gguf`` for a GGUF reader in this process (llama.cpp: declared by that backend with
``declare_extra``), ``pdf`` for PDF documents (PDFium, a compiled library of about 9 MB).
A module that needs one imports it inside ``needed``, so a missing package is a
``MissingExtra``: a ``ModelUnavailable``, which the fallbacks already handle (the
extractive reader, the first stage alone) and the command line prints as one line.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from htmlrag_chat.base.errors import ModelUnavailable

# The top-level modules each extra installs, by extra (the names in pyproject.toml).
EXTRAS: dict[str, tuple[str, ...]] = {
    "transformers": ("torch", "transformers", "accelerate"),
    "gpu": ("torch", "transformers", "sentence_transformers", "accelerate"),
    "pdf": ("pypdfium2",),
}


# What an extra costs besides its download, said wherever it is suggested: llama-cpp-python
# builds llama.cpp from source when no wheel of PyPI fits (Linux: always), on every core.
COSTS: dict[str, str] = {}


@dataclass(frozen=True)
class Extra:
    """An extra a part above the base needs (a reader backend's): its name in
    pyproject.toml, the top-level modules it installs, what it costs besides the download."""

    name: str
    modules: tuple[str, ...]
    cost: str | None = None


def declare_extra(extra: Extra) -> None:
    """Make ``extra`` known here (``needed``, ``install_line``, ``models``), as its owner
    declares it when imported."""
    EXTRAS[extra.name] = extra.modules
    if extra.cost is not None:
        COSTS[extra.name] = extra.cost


class MissingExtra(ModelUnavailable):
    """A feature whose optional packages are not installed."""

    def __init__(self, purpose: str, extra: str, module: str) -> None:
        super().__init__(
            f"{purpose} needs {module}, which the core install leaves out: {install_line(extra)}"
        )
        self.extra = extra
        self.module = module


def install_line(extra: str) -> str:
    """The command that installs ``extra`` here: through the installer that made this
    environment, from the checkout or wheel it came from (``modelio/installer.py``), with what
    it costs besides the download when that is more than a wait (``COSTS``)."""
    from htmlrag_chat.modelio.installer import current

    cost = COSTS.get(extra)
    return current().extra(extra) + (f" ({cost})" if cost else "")


def missing_module(extra: str) -> str | None:
    """The first module of ``extra`` that is not installed, without importing any."""
    for module in EXTRAS[extra]:
        if importlib.util.find_spec(module) is None:
            return module
    return None


def needs_extra(extra: str, purpose: str) -> None:
    """``MissingExtra`` now when ``extra`` is not installed, before any work needs it."""
    module = missing_module(extra)
    if module is not None:
        raise MissingExtra(purpose, extra, module)


@contextmanager
def needed(extra: str, purpose: str) -> Iterator[None]:
    """Imports in the block that fail for a module of ``extra`` raise ``MissingExtra``
    (``purpose`` says what needs it); any other ImportError is a bug and stays one."""
    try:
        yield
    except ModuleNotFoundError as error:
        module = (error.name or "").partition(".")[0]
        if module not in EXTRAS[extra]:
            raise
        raise MissingExtra(purpose, extra, module) from None
