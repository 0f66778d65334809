"""Which model judges the sentences the evidence check cannot decide by their words.

The judge (``evidence/judging.py``) is a chat model asked Yes or No. The reader is the
natural one: it is loaded, and its question continues the answer's own call, so its kept
state reads only the question. Not every reader can: the extractive reader has no model,
and a very small one judges worse than no judge at all (SmolLM2-135M: docs/evidence.md), so
under ``auto`` a reader judges when it has ``MIN_PARAMETERS`` or more (a server's model,
whose size it does not say, is trusted to). ``--judge-model FILE.gguf`` names a model on
disk to judge instead; it reads each question on its own. A judge named that cannot be used
is an error, never a silent fallback to no judge.
"""

from __future__ import annotations

from dataclasses import dataclass

from htmlrag_chat.base.errors import UserError
from htmlrag_chat.base.paths import expand_user
from htmlrag_chat.reader import ChatModel
from htmlrag_chat.reader.llama_cpp_chat import judge_on_file
from htmlrag_chat.reader.settings import ReaderSettings

MIN_PARAMETERS = 1_000_000_000
JUDGE_CONTEXT = 2048  # a judge on its own reads a passage and a sentence, never the sources


@dataclass(frozen=True)
class JudgeChoice:
    model: ChatModel | None  # None: the words decide alone
    alone: bool = False  # it did not write the answer: each question stands on its own
    why: str = ""  # one line when there is no judge, or it is not the reader


def choose_judge(settings: ReaderSettings, chat: ChatModel | None) -> JudgeChoice:
    """The judge ``settings`` ask for, given the reader's model (None: extractive)."""
    if settings.judge == "off":
        return JudgeChoice(None)
    if settings.judge_model:
        path = expand_user(settings.judge_model)
        judge = judge_on_file(path, chat, JUDGE_CONTEXT)
        return JudgeChoice(judge, alone=judge is not chat, why=f"judge: {path.name}")
    if chat is None:
        if settings.judge == "on":
            raise UserError(
                "the extractive reader cannot judge citations: name a GGUF chat model with "
                "--judge-model FILE.gguf, or --judge auto"
            )
        return JudgeChoice(None)
    size = chat.parameters
    if settings.judge == "auto" and size is not None and size < MIN_PARAMETERS:
        why = (
            f"{chat.name} ({size / 1e6:,.0f}M parameters) is too small to judge citations: "
            "the check reads their words alone (--judge-model FILE.gguf names a judge)"
        )
        return JudgeChoice(None, why=why)
    return JudgeChoice(chat)
