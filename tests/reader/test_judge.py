"""Which model judges: the reader from 1B parameters, a model named for it, or none."""

from __future__ import annotations

from pathlib import Path

import pytest

from htmlrag_chat.base.errors import ModelUnavailable, UserError
from htmlrag_chat.reader.judge import choose_judge
from htmlrag_chat.reader.llama_cpp_chat import LlamaCppChat, load_gguf
from htmlrag_chat.reader.openai import OpenAIChat
from htmlrag_chat.reader.settings import ReaderSettings
from tests.smollm2 import smollm2_gguf


def test_a_135m_reader_is_too_small_to_judge_unless_asked_to() -> None:
    smol = LlamaCppChat(str(smollm2_gguf()))
    choice = choose_judge(ReaderSettings(), smol)
    assert choice.model is None and "135M parameters) is too small" in choice.why
    assert choose_judge(ReaderSettings(judge="on"), smol).model is smol
    assert choose_judge(ReaderSettings(judge="off"), smol).model is None


def test_a_server_s_model_judges_and_reads_its_question_after_the_answer() -> None:
    served = OpenAIChat("http://127.0.0.1:9/v1", "qwen2.5:7b")
    choice = choose_judge(ReaderSettings(), served)
    assert choice.model is served and not choice.alone


def test_a_model_named_to_judge_reads_each_question_on_its_own() -> None:
    path = str(smollm2_gguf())
    choice = choose_judge(ReaderSettings(judge_model=path), None)
    assert isinstance(choice.model, LlamaCppChat) and choice.alone
    # Named as the reader's own file, it is the reader, and continues its calls: no second
    # copy of the file is loaded for it (one was, with the judge's smaller context).
    load_gguf.cache_clear()
    reader = LlamaCppChat(path)
    reader.load()
    loaded = load_gguf.cache_info().misses
    assert choose_judge(ReaderSettings(judge_model=path), reader).model is reader
    assert load_gguf.cache_info().misses == loaded


def test_a_judge_that_cannot_be_had_is_an_error_never_a_silent_no_judge(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="no such GGUF file"):
        choose_judge(ReaderSettings(judge_model=str(tmp_path / "missing.gguf")), None)
    with pytest.raises(UserError, match="the extractive reader cannot judge"):
        choose_judge(ReaderSettings(judge="on"), None)
    assert choose_judge(ReaderSettings(), None).model is None  # auto: no judge, no error
