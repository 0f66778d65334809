"""The reader's settings as the code uses them (``ReaderSettings``; the search's are in
``web/settings.py``, the pruning's in ``pruning/factory.py``): one field per setting of the
``[reader]`` section of the settings tree (``settings/tree.py``), which holds their
defaults, checks and help; ``settings/layered.py`` reads them from the file, the
environment and options. It imports no other reader module: those that take it sit above.

The API key comes from the file or the environment only, never from an option, so it does
not end up in shell history or process listings. ``probe_ports`` None means the default
ports of the servers ``reader/discover.py`` knows; an empty tuple turns the probe off.

A reader backend declares the settings that are its own (the GGUF backend's ``gpu_layers``):
they are in the tree like any other, and reach the backend in ``options``, by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from htmlrag_chat.settings.tree import default


@dataclass(frozen=True)
class ReaderSettings:
    reader: str = default("reader.reader")  # a server, a found one, a model on disk, extractive
    model: str | None = default("reader.model")  # None: the backend's default
    base_url: str | None = default("reader.base_url")  # an OpenAI-compatible server
    api_key: str | None = default("reader.api_key")
    max_tokens: int = default("reader.max_tokens")  # the longest answer
    context_tokens: int | None = default("reader.context_tokens")  # when the server won't say
    device: str = default("reader.device")
    correct_citations: bool = default("reader.correct_citations")  # the check's corrections
    judge: str = default("reader.judge")  # auto, on, off: the check's judge
    judge_model: str | None = default("reader.judge_model")  # a GGUF judging for the reader
    probe_ports: tuple[int, ...] | None = default("reader.probe_ports")  # 127.0.0.1 only
    # The backends' own settings (declared by them) that differ from their defaults, by name.
    options: dict[str, Any] = field(default_factory=dict, hash=False)

    @classmethod
    def of(cls, section: Mapping[str, Any]) -> ReaderSettings:
        """The ``[reader]`` section's values: the fields above, the rest the backends' (a
        default left out, so that settings equal in effect are equal)."""
        own = {f.name for f in fields(cls)}
        options = {
            name: value
            for name, value in section.items()
            if name not in own and value != default(f"reader.{name}")
        }
        return cls(**{name: v for name, v in section.items() if name in own}, options=options)

    def option(self, name: str) -> Any:
        """The backend setting ``name``: as given, else its declared default."""
        return self.options[name] if name in self.options else default(f"reader.{name}")
