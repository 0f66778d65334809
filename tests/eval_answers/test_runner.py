"""What an answer's reading is keyed by: what the reader was given and the code that
reads, not the code that made the context or grades the answer."""

from __future__ import annotations

import asyncio
import datetime as dt
from types import SimpleNamespace

import pytest

from htmlrag_chat.base import prompts
from htmlrag_chat.base.sources import Source
from htmlrag_chat.eval.code import code_modules
from htmlrag_chat.eval_answers.reading import DAY, read, reading_key
from htmlrag_chat.eval_answers.runner import reading_roots
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.reader.llama_cpp_chat import LlamaCppChat
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.reader.openai import OpenAIChat
from tests.openai_server import ScriptedLLM, serve_llm

GGUF_READER = LLMReader(LlamaCppChat("model.gguf"), kind="gguf")  # loads nothing until asked


def test_a_changed_method_check_or_grade_costs_no_model_call() -> None:
    """The contexts are made again on every run and the grades worked out again, so
    editing the methods, pruning, the evidence check or grading must leave every cached
    reading's key as it was; the reader, the prompt layout and the reading make the answer
    from its prompt, so they are in it."""
    modules = code_modules(roots=reading_roots(GGUF_READER))
    for layer in ("evidence", "pruning", "scoring", "eval.", "eval_answers.grading"):
        assert not any(m.startswith(f"htmlrag_chat.{layer}") for m in modules), layer
    for module in ("reader.llm", "reader.llama_cpp_chat", "reader.layout", "eval_answers.reading"):
        assert f"htmlrag_chat.{module}" in modules


def test_another_backends_code_is_not_in_a_readings_key() -> None:
    """A GGUF reading does not depend on how a transformers model is found and loaded, nor
    on the server client; each reader's key holds its own backend."""
    gguf = code_modules(roots=reading_roots(GGUF_READER))
    for module in ("modelio.hub", "modelio.loader", "reader.local", "reader.openai"):
        assert f"htmlrag_chat.{module}" not in gguf, module
    server = LLMReader(OpenAIChat("http://127.0.0.1:9/v1", "m"), kind="server")
    assert "htmlrag_chat.reader.openai" in code_modules(roots=reading_roots(server))
    assert "htmlrag_chat.reader.extractive" in reading_roots(ExtractiveReader())


def source(content: str, number: int = 1) -> Source:
    return Source(number, "pages/a.html", "A page", f"<p>{content}</p>", content)


def test_a_reading_is_keyed_by_the_prompt_the_reader_gets() -> None:
    """The same question over the same sources is the same reading, whichever method made
    them; another word in a source, another source or another question is a new one."""
    key = reading_key("Who?", [source("Ada wrote it.")])
    assert reading_key("Who?", [source("Ada wrote it.")]) == key
    assert reading_key("Who?", [source("Bob wrote it.")]) != key
    assert reading_key("Who?", [source("Ada wrote it."), source("More.", 2)]) != key
    assert reading_key("Who else?", [source("Ada wrote it.")]) != key


class _Tomorrow(dt.date):
    """A clock a day on: after today and after ``DAY``, so never ``DAY`` itself."""

    @classmethod
    def today(cls) -> _Tomorrow:
        day = max(dt.date.today(), dt.date.fromisoformat(DAY)) + dt.timedelta(days=1)
        return cls(day.year, day.month, day.day)


def test_a_reading_key_does_not_change_with_the_day_it_is_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The system prompt gives today's date; an evaluation's prompts give ``DAY`` instead,
    so a run that goes on past midnight keeps its cached answers and reads what it began
    with. Outside the evaluation, prompts still say the real date."""
    key = reading_key("Who?", [source("Ada wrote it.")])
    assert DAY in key[0]["content"]
    monkeypatch.setattr(prompts, "dt", SimpleNamespace(date=_Tomorrow))
    assert reading_key("Who?", [source("Ada wrote it.")]) == key
    assert prompts.today() == _Tomorrow.today().isoformat() != DAY


def test_the_reader_gets_the_prompt_its_reading_is_keyed_by(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a server receives is the key's prompt, dated ``DAY`` when the clock says
    tomorrow: a cached answer is the answer to the prompt its key names."""
    monkeypatch.setattr(prompts, "dt", SimpleNamespace(date=_Tomorrow))
    sources = [source("Ada wrote it.")]
    llm = ScriptedLLM(lambda messages: "Ada wrote it [1].")

    async def main() -> dict[str, object]:
        async with serve_llm(llm) as url:
            reader = LLMReader(OpenAIChat(url, llm.model), kind="server")
            return await read(reader, "Who wrote it?", sources)

    reading = asyncio.run(main())
    assert reading["answer"] == "Ada wrote it [1]."
    [request] = llm.requests
    assert request["messages"] == reading_key("Who wrote it?", sources)
    assert DAY in request["messages"][0]["content"]
