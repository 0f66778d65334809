"""The transformers reader loading the same real GGUF file (dequantised by transformers
with the ``gguf`` package): slow to load on a CPU, so one test, one load."""

from __future__ import annotations

import asyncio

from htmlrag_chat.reader import Source
from htmlrag_chat.reader.layout import answer_messages
from tests.smollm2 import smollm2_gguf

SOURCE = Source(
    1,
    "https://example.org/eiffel",
    "Eiffel Tower",
    "<p>The Eiffel Tower in Paris was completed on 31 March 1889.</p>",
    "",
)


def test_transformers_reads_the_gguf_file_and_streams_an_answer() -> None:
    from htmlrag_chat.reader.local import LocalChat

    path = smollm2_gguf()
    chat = LocalChat(str(path.parent), device="cpu", local_only=True, gguf_file=path.name)
    messages = answer_messages("When was the Eiffel Tower completed?", [SOURCE])

    async def collect() -> list[str]:
        return [chunk async for chunk in chat.stream(messages, 12)]

    chunks = asyncio.run(collect())
    model, tokenizer = chat.load()
    assert model.config.model_type == "llama" and chat.context_tokens == 8192
    # The answer's prompt is kept in the KV cache: asked again, only its last token is read.
    assert chat.pending_tokens(messages) == 1
    chat.forget()
    assert chat.pending_tokens(messages) == len(chat.prompt_ids(messages)) > 50
    assert len(chunks) > 1 and "".join(chunks).strip()
    assert tokenizer.eos_token == "<|im_end|>"  # the GGUF's own vocabulary came with it
