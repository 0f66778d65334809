"""The reader's settings as the code uses them (``ReaderSettings``; the search's are in
``web/settings.py``, the pruning's in ``pruning/factory.py``): one field per setting of the
``[reader]`` section of the settings tree (``settings/tree.py``), which holds their
defaults, checks and help; ``settings/layered.py`` reads them from the file, the
environment and options. It imports no other reader module: those that take it sit above.

The API key comes from the file or the environment only, never from an option, so it does
not end up in shell history or process listings. ``probe_ports`` None means the default
ports of the servers ``reader/discover.py`` knows; an empty tuple turns the probe off.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    gpu_layers: int = default("reader.gpu_layers")  # a GGUF's layers offloaded (-1: all)
    correct_citations: bool = default("reader.correct_citations")  # the check's corrections
    judge: str = default("reader.judge")  # auto, on, off: the check's judge
    judge_model: str | None = default("reader.judge_model")  # a GGUF judging for the reader
    probe_ports: tuple[int, ...] | None = default("reader.probe_ports")  # 127.0.0.1 only
