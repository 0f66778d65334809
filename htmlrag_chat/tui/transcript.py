"""The chat transcript: questions, streamed answers, notes and errors.

Text from the web and from models is shown as text: ``Content`` objects and the Markdown
widget, never a string parsed as console markup.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownStream

from htmlrag_chat.agent.answer import stored_source
from htmlrag_chat.base.safety import terminal_safe
from htmlrag_chat.evidence.claims import Claim
from htmlrag_chat.evidence.records import stored_claims
from htmlrag_chat.evidence.words import correction_lines, evidence_lines
from htmlrag_chat.reader import Source
from htmlrag_chat.reader.literal import escape_markdown
from htmlrag_chat.tui.markdown import CitationLinker, link_citations
from htmlrag_chat.tui.texts import stored_meta


class Transcript(VerticalScroll):
    """The conversation, scrolled to follow a streaming answer until the user scrolls."""

    def on_mount(self) -> None:
        self.anchor()


class Welcome(Static):
    """The chat's first words (``texts.welcome``): shown as text, never markup, since a
    recorded question is data."""

    def __init__(self, text: str) -> None:
        super().__init__(Content(terminal_safe(text)))


class QuestionView(Static):
    def __init__(self, question: str) -> None:
        super().__init__(Content(terminal_safe(question)))


class NoteView(Static):
    """A notice from the pipeline (a fallback, a skipped query), in the flow of the chat."""

    def __init__(self, text: str) -> None:
        super().__init__(Content(terminal_safe(text)))


class ErrorView(Static):
    """What went wrong and what to do about it, where the answer would have been."""

    def __init__(self, text: str) -> None:
        super().__init__(Content(terminal_safe(text)))


class AnswerView(Vertical, can_focus=True):
    """One answer: Markdown that grows as it streams, then the words of the sources that
    back its sentences (plain text: a quote is page text, its "[3]" no citation), then a
    line on how it was made.

    Focus it (click, Tab) to list its sources; press a number to highlight that source.
    """

    class Selected(Message):
        def __init__(self, view: AnswerView, number: int | None = None) -> None:
            super().__init__()
            self.view = view
            self.number = number  # a source to highlight, if a citation was picked

    def __init__(
        self,
        text: str = "",
        sources: Sequence[Source] = (),
        meta: str = "",
        cited: Collection[int] | None = None,
        claims: Sequence[Claim] = (),
    ) -> None:
        super().__init__()
        self.text = text  # Markdown: text quoted from sources is escaped
        self.sources = tuple(sources)
        self.cited = cited  # the sources the answer cites; None until it is complete
        self._meta = meta
        self._evidence = evidence_text(claims)
        self._stream: MarkdownStream | None = None
        self._linker = CitationLinker()

    def compose(self) -> ComposeResult:
        yield Markdown(link_citations(self.text), open_links=False)
        evidence = Static(Content(self._evidence), classes="evidence")
        evidence.display = bool(self._evidence)
        yield evidence
        yield Static(Content(self._meta), classes="meta")

    async def write(self, text: str, quoted: bool = False) -> None:
        """Append streamed answer text (whole citations: the agent's filter holds partial
        ones back); ``quoted`` text from a source is escaped, so it shows as it is."""
        if self._stream is None:
            self._stream = Markdown.get_stream(self.query_one(Markdown))
        if quoted:
            text = escape_markdown(text)
        self.text += text
        linked = self._linker.feed(text)
        if linked:
            await self._stream.write(linked)

    async def retract(self) -> None:
        """Take back what was streamed (it was the model's reasoning): the answer starts
        again."""
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        self.text = ""
        self._linker = CitationLinker()
        await self.query_one(Markdown).update("")

    async def finish(
        self,
        meta: str,
        sources: Sequence[Source] = (),
        text: str | None = None,
        cited: Collection[int] | None = None,
        claims: Sequence[Claim] = (),
    ) -> None:
        """End the stream; ``text`` is the answer as saved (the streamed one, trimmed), and
        ``claims`` its sentences with their evidence."""
        if self._stream is not None:
            rest = self._linker.finish()
            if rest:
                await self._stream.write(rest)
            await self._stream.stop()
            self._stream = None
        if text is not None and text != self.text:
            # The answer as saved: the check corrected a citation (or the stream was cut).
            self.text = text
            await self.query_one(Markdown).update(link_citations(text))
        self.sources, self.cited = tuple(sources), cited
        self._evidence = evidence_text(claims)
        evidence = self.query_one(".evidence", Static)
        evidence.update(Content(self._evidence))
        evidence.display = bool(self._evidence)
        self.set_meta(meta)

    @property
    def evidence(self) -> str:
        """The quotes shown under the answer ("" for none)."""
        return self._evidence

    def set_meta(self, meta: str) -> None:
        self._meta = meta
        self.query_one(".meta", Static).update(Content(meta))

    def on_focus(self) -> None:
        self.post_message(self.Selected(self))

    def on_key(self, event: events.Key) -> None:
        if event.character and event.character.isdigit() and event.character != "0":
            event.stop()
            self.post_message(self.Selected(self, int(event.character)))


def evidence_text(claims: Sequence[Claim]) -> str:
    """The quotes under an answer, made safe for the terminal (they are page text)."""
    return terminal_safe("\n".join(evidence_lines(claims)))


def stored_views(messages: Sequence[dict[str, Any]]) -> list[Widget]:
    """A reopened conversation as the transcript shows it: each question with its latest
    stored answer, or a note where it got none."""
    views: list[Widget] = []
    for message in messages:
        if message["role"] != "user":
            continue
        views.append(QuestionView(message["content"]))
        if message["answers"]:
            stored = message["answers"][-1]
            sources = [stored_source(s) for s in stored["sources"]]
            claims = stored_claims(stored["citations"])
            cited = {number for claim in claims for number in claim.shown}
            meta = stored_meta(stored, len(cited), correction_lines(claims))
            views.append(AnswerView(stored["text"], sources, meta, cited, claims))
        else:
            views.append(NoteView("no answer (stopped or failed)"))
    return views
