"""``ask --reader auto`` with a real model behind a real server: llama-cpp-python's own
``llama_cpp.server`` serving SmolLM2 on a free loopback port that the probe is told about,
answering the demo question from the bundled recording. What the issue's check does by
hand, short: a small budget and a short answer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from htmlrag_chat.base.sources import Source
from htmlrag_chat.cli import main
from htmlrag_chat.reader.layout import judge_messages
from htmlrag_chat.reader.llama_cpp_chat import LlamaCppChat
from htmlrag_chat.reader.openai import OpenAIChat
from htmlrag_chat.reader.window import ServerTokenCounter, token_route
from tests.conftest import DEMO, import_demo
from tests.smollm2 import ALIAS, LlamaServer, llama_server, smollm2_gguf

QUESTION = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    with llama_server(tmp_path_factory.mktemp("llama-server")) as running:
        yield running


def test_auto_finds_the_server_and_answers_with_one_prefill(
    server: LlamaServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("HTMLRAG_CHAT_PROBE_PORTS", str(server.port))
    monkeypatch.setenv("HTMLRAG_CHAT_DERIVED", str(tmp_path / "derived.db"))
    recording = import_demo(tmp_path)
    capsys.readouterr()
    argv = ["--replay-db", str(recording), "ask", "--reader", "auto", "--json"]
    argv += ["--pruner", "bm25", "--budget", "512", "--max-tokens", "40", "--progress"]
    before = len(server.evaluated())
    assert main([*argv, QUESTION]) == 0
    captured = capsys.readouterr()
    record = json.loads(captured.out)

    assert f"reader: {ALIAS} on the server at 127.0.0.1:{server.port}" in captured.err
    assert (record["reader"], record["model"]) == ("found", ALIAS)
    assert not any("<" in query or ">" in query for query in record["queries"])
    assert record["sources"]  # listed whether or not the answer cites them
    checked = [sentence for sentence in record["sentences"] if sentence["checked"]]
    backed = bool(checked) and not any(sentence["unsupported"] for sentence in checked)
    assert record["cited"] is backed and len(record["flags"]) == sum(
        sentence["unsupported"] for sentence in checked
    )
    # The sources were shown on stderr before the reader read them.
    assert captured.err.index("sources (") < captured.err.rindex("reader: prefilling")
    # The answer continued the sufficiency check's prompt: the server found it in its cache
    # and evaluated only what follows the question (the answer's reminder, about 30 tokens,
    # prompts/answer.md, and the template's turn markers), not the sources again.
    calls = server.evaluated()[before:]
    answered = next(i for i, (hit, remaining) in enumerate(calls) if hit > 300 and remaining <= 48)
    # The judge's questions after it read only themselves: the answer's prompt and the
    # answer were in the server's cache.
    judged = calls[answered + 1 :]
    assert all(hit >= calls[answered][0] and remaining <= 160 for hit, remaining in judged)
    # Budgets were counted with the server's own tokenizer, not the approximation.
    assert "approximation" not in captured.err


def test_budgets_count_with_the_server_s_tokenizer(server: LlamaServer) -> None:
    route = token_route(server.base_url)
    assert route == "/extras/tokenize/count"  # llama-cpp-python's; llama.cpp's is /tokenize
    counter = ServerTokenCounter(server.base_url, ALIAS, route)
    text = "FaceTime Attention Correction uses ARKit to grab a depth map."
    local = LlamaCppChat(str(smollm2_gguf())).load()
    assert counter.count_many([text, text]) == [len(local.tokenize(text.encode(), False))] * 2


def test_the_judge_reads_a_real_server_s_top_logprobs_after_the_answer(
    server: LlamaServer,
) -> None:
    chat = OpenAIChat(server.base_url, ALIAS, llama_cpp=True)
    sources = [Source(1, "https://t.example/", "Eiffel Tower", "<p>Completed in 1889.</p>", "x")]
    question = "When was the Eiffel Tower completed?"
    asked = [
        judge_messages(question, sources, (), "It was completed in 1889 [1].", said, passage, 1)
        for said, passage in (
            ("It was completed in 1889.", "Completed in 1889."),
            ("It is made of wood.", "Completed in 1889."),
        )
    ]
    verdicts = asyncio.run(chat.yes_probabilities(asked))
    # Probabilities from the first token's top log-probabilities, not a bare one-word reply.
    assert all(v is not None and 0.0 < v < 1.0 for v in verdicts)
    request = server.evaluated()[-1]
    # The second question shared the whole answer with the first: only its end was read.
    assert request[1] < 60 < request[0]
