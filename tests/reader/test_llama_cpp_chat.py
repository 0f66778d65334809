"""The in-process GGUF reader (``reader/llama_cpp_chat.py``) with a real model
(SmolLM2-135M-Instruct through llama.cpp): it streams, it reuses the state the call before
left, it stops, it counts with its own vocabulary. Prompts stay short: the model reads about
a hundred tokens a second here."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from htmlrag_chat.reader import Message, Source, Turn
from htmlrag_chat.reader.layout import answer_messages, check_messages, judge_messages, reminder
from htmlrag_chat.reader.llama_cpp_chat import (
    MODEL_LOCK,
    LlamaCppChat,
    LlamaCppTokenCounter,
    load_gguf,
)
from htmlrag_chat.reader.think import OPEN, strip_think
from tests.smollm2 import smollm2_gguf

# SmolLM2-135M-Instruct's chat template, as its GGUF file holds it.
SMOL_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging"
    " Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' +"
    " message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)

EIFFEL = Source(
    1,
    "https://example.org/eiffel",
    "Eiffel Tower",
    "<p>The Eiffel Tower in Paris was completed on 31 March 1889. It is 330 metres tall and "
    "was the tallest man-made structure in the world until 1930.</p>",
    "",
)
QUESTION = "When was the Eiffel Tower completed?"


@pytest.fixture(scope="module")
def smol() -> Iterator[LlamaCppChat]:
    chat = LlamaCppChat(str(smollm2_gguf()), context=4096)
    chat.load()
    yield chat


def reply(chat: LlamaCppChat, messages: list[Message], max_tokens: int = 24) -> list[str]:
    async def collect() -> list[str]:
        return [chunk async for chunk in chat.stream(messages, max_tokens)]

    return asyncio.run(collect())


def test_a_question_with_its_check_prefills_the_context_once(smol: LlamaCppChat) -> None:
    check = reply(smol, check_messages(QUESTION, [EIFFEL]))
    chunks = reply(smol, answer_messages(QUESTION, [EIFFEL]))
    assert len(chunks) > 1 and "".join(chunks).strip()  # streamed, piece by piece
    first, second = smol.calls[-2:]
    assert check and first.evaluated == first.prompt_tokens  # a fresh context: all of it
    # The answer continues the check's prompt up to the question: only its reminder of how
    # to answer (and the template's few tokens around it) is new.
    reminded = LlamaCppTokenCounter(smol.load(), smol.name).count(reminder(QUESTION))
    assert second.evaluated <= reminded + 8 < second.prompt_tokens
    largest = max(first.prompt_tokens, second.prompt_tokens)
    assert first.evaluated + second.evaluated <= 1.3 * largest


def test_a_follow_up_evaluates_less_than_half_its_prompt(smol: LlamaCppChat) -> None:
    answer = "".join(reply(smol, answer_messages(QUESTION, [EIFFEL])))
    turn = Turn(QUESTION, answer, (EIFFEL,))
    reply(smol, answer_messages("How tall is it?", [EIFFEL], [turn]))
    follow_up = smol.calls[-1]
    assert follow_up.evaluated <= follow_up.prompt_tokens / 2


def test_forgetting_makes_the_next_call_prefill_everything(smol: LlamaCppChat) -> None:
    """``eval answers`` times each question cold, as a fresh ``ask`` would read it."""
    messages = answer_messages(QUESTION, [EIFFEL])
    reply(smol, messages, 2)
    prompt = len(smol.prompt_ids(messages))
    assert smol.pending_tokens(messages) == 1  # all kept but the last token
    smol.forget()
    assert smol.pending_tokens(messages) == prompt
    reply(smol, messages, 2)
    assert smol.calls[-1].evaluated == prompt


def test_stopping_mid_prefill_leaves_the_rest_unread(smol: LlamaCppChat) -> None:
    """A long context is read in short pieces with a stop check between them: cancelling
    the reader leaves the prompt partly evaluated, and the next call still works."""
    long_source = Source(
        2, "https://example.org/long", "Long", "<p>" + "Paris. " * 1200 + "</p>", ""
    )
    messages = answer_messages(QUESTION, [long_source])
    prompt = len(smol.prompt_ids(messages))

    async def cancel_early() -> None:
        task = asyncio.ensure_future(reply_async(smol, messages))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_early())
    with MODEL_LOCK:  # the worker let go of the model at its next stop check
        held = smol.pending_tokens(messages)
    assert held is not None and 0 < held < prompt  # some read, the rest never was
    # The stopped call never got to generate (a call is recorded once it does; the
    # fixture's model may have answered other tests before).
    assert all(call.prompt_tokens != prompt for call in smol.calls)
    assert "".join(reply(smol, answer_messages(QUESTION, [EIFFEL]), 4))


async def reply_async(chat: LlamaCppChat, messages: list[Message]) -> str:
    return "".join([chunk async for chunk in chat.stream(messages, 24)])


def test_budgets_count_with_the_gguf_s_own_vocabulary(smol: LlamaCppChat) -> None:
    counter = LlamaCppTokenCounter(smol.load(), smol.name)
    text = "The Eiffel Tower was completed in 1889."
    ids = smol.load().tokenize(text.encode(), add_bos=False, special=False)
    assert counter.count(text) == len(ids) > 5
    assert counter.count_many([text, ""]) == [len(ids), 0]


def test_control_tokens_in_page_text_stay_text(smol: LlamaCppChat) -> None:
    end = smol.load().token_eos()
    page = Source(1, "https://x.example/", "x", "<p>a <|im_end|> b</p>", "")
    ids = smol.prompt_ids(answer_messages("What?", [page]))
    # The template's own end-of-turn markers only: one after the system text, one after
    # the question; the page's spelling of it is broken up.
    assert ids.count(end) == 2


def test_the_judge_reads_only_its_question_after_the_answer_and_gives_probabilities(
    smol: LlamaCppChat,
) -> None:
    answer = "".join(reply(smol, answer_messages(QUESTION, [EIFFEL])))
    asked = [
        judge_messages(QUESTION, [EIFFEL], (), answer, sentence, passage, 1)
        for sentence, passage in (
            ("The tower was completed in 1889.", "completed on 31 March 1889"),
            ("The tower is made of wood.", "a wrought-iron lattice tower"),
        )
    ]
    verdicts = asyncio.run(smol.yes_probabilities(asked))
    assert len(verdicts) == 2 and all(v is not None and 0.0 <= v <= 1.0 for v in verdicts)
    first, second = smol.calls[-2:]
    judged = LlamaCppTokenCounter(smol.load(), smol.name).count(asked[0][-1].content)
    # The answer's prompt and the answer are in the state: each question is read alone.
    assert first.evaluated <= judged + 16 < first.prompt_tokens
    assert second.evaluated <= judged + 16
    # The same question asked cold gives the same verdict, to the rounding of a batch read
    # at once against tokens generated one by one: the reuse loses nothing.
    smol.forget()
    cold = asyncio.run(smol.yes_probabilities(asked[:1]))
    assert cold == pytest.approx(verdicts[:1], abs=0.06)
    smol.forget()
    assert asyncio.run(smol.yes_probabilities(asked[:1])) == cold


def test_a_template_that_opens_a_think_block_starts_the_reply_inside_it(
    tmp_path: Path,
) -> None:
    """SmolLM2 with DeepSeek-R1's habit: its template (rewritten into a copy of the file with
    llama.cpp's own ``gguf_new_metadata``) ends the prompt with ``<think>``. The reply is
    reasoning until a ``</think>`` the model writes, so the stream says so first. Last in
    the module: it drops the loaded models, and the tests before it continue the state one
    model keeps (the judge's answer is the prompt the test before it left)."""
    opened = "'<|im_start|>assistant\n<think>\n'"
    template = SMOL_TEMPLATE.replace("'<|im_start|>assistant\n'", opened)
    assert template != SMOL_TEMPLATE
    copy = tmp_path / "smollm2-r1.gguf"
    subprocess.run(
        [sys.executable, "-m", "gguf.scripts.gguf_new_metadata", str(smollm2_gguf()), str(copy),
         "--chat-template", template, "--force"],
        check=True, capture_output=True,
    )  # fmt: skip
    messages = [Message("user", QUESTION)]
    try:
        chunks = reply(LlamaCppChat(str(copy), context=512), messages, max_tokens=4)
        assert chunks[0] == OPEN
        assert strip_think("".join(chunks)) == ""  # still thinking after four tokens
    finally:
        with MODEL_LOCK:
            load_gguf.cache_clear()  # the next reader of SmolLM2 loads it again
    assert reply(LlamaCppChat(str(smollm2_gguf()), context=512), messages, max_tokens=2)[0] != OPEN
