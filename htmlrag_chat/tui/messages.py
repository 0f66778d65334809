"""The messages a question sends the chat app: its pipeline's events as they happen, then
one ``QuestionEnded`` (answered, stopped, or failed), after its last delta."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from htmlrag_chat.agent.answer import Answer
from htmlrag_chat.base.events import Event
from htmlrag_chat.tui.transcript import AnswerView


class PipelineEvent(Message):
    """An event of the running question (posted from the loop or from a loading thread)."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


@dataclass
class QuestionResult:
    answer: Answer | None = None
    error: BaseException | None = None  # None with no answer: stopped


class QuestionEnded(Message):
    def __init__(self, view: AnswerView, message_id: int, outcome: QuestionResult) -> None:
        super().__init__()
        self.view = view
        self.message_id = message_id
        self.outcome = outcome
