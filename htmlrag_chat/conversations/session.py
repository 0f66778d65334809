"""A conversation as the chat app and ``ask -c`` use it: which one is open, the turns a
follow-up builds on (the stored answers and their sources, as the reader saw them), and
saving each exchange as it happens. Both go through here, so a follow-up gets the same
history and sources from either.

No widgets here. Every call runs on the thread the store belongs to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htmlrag_chat.agent.answer import Answer, Turn, turns_from_messages
from htmlrag_chat.base.atomic import write_text
from htmlrag_chat.base.errors import UserError
from htmlrag_chat.base.paths import shown_path
from htmlrag_chat.conversations.export import conversation_markdown, export_path
from htmlrag_chat.evidence.correction import unmarked
from htmlrag_chat.store.db import Store

TITLE_CHARS = 80  # a new conversation is titled with the start of its first question


@dataclass
class ChatSession:
    store: Store  # where conversations are kept (a scratch file in a replay)
    kept: bool = True  # False: the store is thrown away at exit
    conversation: int | None = None  # None: a new chat, created by its first question
    title: str = ""
    turns: list[Turn] = field(default_factory=list)

    def conversations(self) -> list[dict[str, Any]]:
        """Every conversation, the most recently active first, with its ``turns``."""
        return self.store.conversation_summaries()

    def new(self) -> None:
        self.conversation, self.title, self.turns = None, "", []

    def open(self, conversation_id: int) -> list[dict[str, Any]]:
        """Make a stored conversation the current one; returns its messages to show."""
        messages = self.store.messages(conversation_id)
        found = self.store.conversation(conversation_id)
        self.conversation, self.title = conversation_id, found["title"] if found else ""
        self.turns = turns_from_messages(messages)
        return messages

    def question_asked(self, question: str) -> int:
        """Save the question before it is answered, so a stopped one is still in the
        history (one transaction with the new conversation it may open); returns the
        message id its answer is saved under. ``ask`` and the chat app both save here."""
        title = title_for(question) if self.conversation is None else self.title
        self.conversation, message_id = self.store.save_question(
            self.conversation, question, title=title
        )
        self.title = title
        return message_id

    def answered(self, message_id: int, answer: Answer) -> None:
        self.turns.append(Turn(answer.question, unmarked(answer.markdown), tuple(answer.sources)))
        self.store.add_answer(message_id, **answer.store_record())

    def rename(self, conversation_id: int, title: str) -> None:
        self.store.rename_conversation(conversation_id, title)
        if conversation_id == self.conversation:
            self.title = title

    def delete(self, conversation_id: int) -> None:
        self.store.delete_conversation(conversation_id)
        if conversation_id == self.conversation:
            self.new()

    def export(self, folder: Path, replace: bool = True) -> Path:
        """Write the open conversation as Markdown into ``folder``; returns the file. An
        earlier export of it is written over only when ``replace`` (the chat app's Ctrl+S
        brings its own file up to date; ``history export`` asks for ``--force``)."""
        if self.conversation is None:
            raise LookupError("nothing to export yet: ask a question first")
        path = export_path(folder, self.conversation, self.title)
        if path.exists() and not replace:
            raise UserError(f"{shown_path(path)} exists: --force writes over it")
        text = conversation_markdown(self.title, self.store.messages(self.conversation))
        write_text(path, text, inputs=[self.store.path])  # never over the cache itself
        return path


def title_for(question: str) -> str:
    """A new conversation's title: its first question, cut at a word near ``TITLE_CHARS``."""
    words = " ".join(question.split())
    if len(words) <= TITLE_CHARS:
        return words
    cut = words.rfind(" ", 0, TITLE_CHARS + 1)
    return words[: cut if cut > 0 else TITLE_CHARS] + "…"
