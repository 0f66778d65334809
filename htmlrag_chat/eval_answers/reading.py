"""One answer, read as ``ask`` reads it, and what it cost.

The answer goes through ``agent.reading.read_answer``, the one place where model output
becomes what a person reads (invented citations removed, control tokens defused, think
blocks dropped). The record keeps what grading needs to check it as ``ask`` does (the
answer's Markdown, each source's pruned HTML and visible text), not the check's verdicts:
a changed check is a new grade of the same answers, not new model calls. A GGUF reader
keeps its llama.cpp state between calls, so that a conversation's calls reuse their shared prefix;
here every question starts cold (``GGUFChat.forget``), as a fresh ``ask`` does, so that a
question's prefill time does not depend on which question ran before it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from htmlrag_chat.agent.reading import Reader, read_answer
from htmlrag_chat.base.events import ignore
from htmlrag_chat.base.sources import Source
from htmlrag_chat.reader.gguf import GGUFChat
from htmlrag_chat.reader.layout import answer_messages, source_content

_CHUNK = 1 << 20


async def read(reader: Reader, question: str, sources: Sequence[Source]) -> dict[str, Any]:
    """The answer to ``question`` from ``sources``, what it was read from and its costs:
    prompt tokens (None when the backend does not say), seconds to the first piece of the
    answer (the prefill, for an LLM) and in all."""
    chat = reader.chat
    if isinstance(chat, GGUFChat):
        chat.forget()
    prompt_tokens = chat.pending_tokens(answer_messages(question, sources)) if chat else None
    start = time.perf_counter()
    text, markdown, first_ms, removed = await read_answer(
        reader, question, list(sources), (), ignore, start
    )
    total = time.perf_counter() - start
    calls = getattr(chat, "calls", None)
    if prompt_tokens is None and calls:  # a server that reported its usage
        prompt_tokens = calls[-1].prompt_tokens
    return {
        "answer": text,
        "markdown": markdown,  # what the evidence check reads
        "removed_citations": removed,
        "sources": [
            {"number": s.number, "url": s.url, "title": s.title, "content": source_content(s)}
            for s in sources
        ],
        # What grading matches against: the visible texts, and the pruned HTML whose
        # passages the evidence check cuts.
        "texts": [source.text for source in sources],
        "html": [source.html for source in sources],
        "prompt_tokens": prompt_tokens,
        "prefill_s": None if first_ms is None else round(first_ms / 1000, 3),
        "total_s": round(total, 3),
    }


def reader_identity(reader: Reader) -> dict[str, str]:
    """What answers depend on besides the code and the prompt: the backend, the model's
    name and, for a GGUF file, the sha256 of its bytes (a file replaced under the same name
    is measured again). A server's weights cannot be read: its model name and address
    stand for them; a transformers model is named by its id or folder."""
    identity = {"kind": reader.kind, "model": reader.name}
    chat = reader.chat
    if isinstance(chat, GGUFChat):
        identity["sha256"] = file_sha256(Path(chat.path).expanduser())
    base_url = getattr(chat, "base_url", None)
    if base_url:
        identity["base_url"] = str(base_url)
    return identity


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()
