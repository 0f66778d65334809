"""Research in the chat app: ``/research QUESTION`` (or the palette's "Research") runs the
question in parts (``research/``) and answers with one report.

While it runs, a list of its parts above the answer shows each one's state (waiting,
running, answered, nothing found, stopped), each part's answer streams into the answer
under its heading, and the status line is the research's (part, stage, time left). Once it
ends, the answer becomes the report: the short answer, the parts, one list of references,
each sentence's evidence under it; the history keeps it as it keeps answers. Esc stops it:
the parts done are the report, kept in the history and in the cache, so the same research
again resumes from them.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual.content import Content
from textual.widget import Widget
from textual.widgets import Input, Static

from htmlrag_chat.base.events import Event, Notice, PartEnded, PartsPlanned, PartStarted
from htmlrag_chat.base.safety import one_line, terminal_safe
from htmlrag_chat.reader.literal import escape_markdown
from htmlrag_chat.research.kept import ResearchCache
from htmlrag_chat.research.progress import ResearchStatus
from htmlrag_chat.research.report import ANSWERED, FAILED, NOTHING, STOPPED
from htmlrag_chat.research.runner import Researcher
from htmlrag_chat.tui.messages import QuestionEnded, QuestionResult
from htmlrag_chat.tui.transcript import AnswerView, QuestionView

if TYPE_CHECKING:
    from htmlrag_chat.agent.answer import Answer
    from htmlrag_chat.tui.app import ChatApp

COMMAND = "/research"
MARKS = {"waiting": "·", "running": "▸", ANSWERED: "✓", NOTHING: "∅", FAILED: "✗", STOPPED: "■"}


def research_question(text: str) -> str | None:
    """The question after ``/research`` ("" when none follows), or None for a question."""
    head, _, rest = text.strip().partition(" ")
    return rest.strip() if head.casefold() == COMMAND else None


async def research_typed(prompt: Input) -> None:
    """The palette's Research: the question typed sent as a research."""
    if research_question(prompt.value) is None:
        prompt.value = f"{COMMAND} {prompt.value.strip()}"
    await prompt.action_submit()


class PartsView(Static):
    """The live list of a research's parts, each with its state."""

    def __init__(self) -> None:
        super().__init__(Content("taking the question apart…"), classes="parts")

    def show(self, status: ResearchStatus) -> None:
        lines = []
        for number, part in enumerate(status.parts, 1):
            state = status.states.get(number)
            if state is None:
                state = "running" if number == status.current else "waiting"
            lines.append(f"{MARKS.get(state, '?')} {number}. {one_line(part)} ({state})")
        self.update(Content(terminal_safe("\n".join(lines))))


class ResearchRun:
    """One research in the app: its parts' list and the answer view it streams into."""

    def __init__(self, app: ChatApp, view: AnswerView, question: str) -> None:
        self.app = app
        self.view = view
        self.question = question
        self.parts = PartsView()
        self.status = ResearchStatus(clock=app.clock)
        self.status.pipeline.stage = "load"
        self.researcher: Researcher | None = None

    async def on_event(self, event: Event) -> None:
        """A part's event: its list redrawn; a part begun heads its answer in the view."""
        if isinstance(event, PartStarted) and len(self.status.parts) > 1:
            await self.view.write(f"\n\n**{event.number}. {escape_markdown(event.part)}**\n\n")
        if isinstance(event, PartsPlanned | PartStarted | PartEnded):
            self.parts.show(self.status)

    def views(self) -> list[Widget]:
        """What the transcript shows of it: the question, the parts' list, the answer."""
        return [QuestionView(self.question), self.parts, self.view]

    async def run(self, message_id: int) -> None:
        """The research, ended with one ``QuestionEnded``: the report (a stopped one with
        what was done, if anything was), or the error."""
        app = self.app
        try:
            agent = await app.agent()
            agent.search_with(app.options.search)
            notice = app.post_event
            cache = ResearchCache(app.cache, lambda text: notice(Notice(text)), app.options.refresh)
            self.researcher = Researcher(agent, cache, app.options.max_parts)
            report = await self.researcher.run(self.question)
        except asyncio.CancelledError:
            for number in range(1, len(self.status.parts) + 1):
                self.status.states.setdefault(number, STOPPED)
            self.parts.show(self.status)
            done = self._done()
            app.post_message(QuestionEnded(self.view, message_id, QuestionResult(answer=done)))
            raise
        except Exception as error:
            app.post_message(QuestionEnded(self.view, message_id, QuestionResult(error=error)))
            return
        result = QuestionResult(answer=report.as_answer())
        app.post_message(QuestionEnded(self.view, message_id, result))

    def _done(self) -> Answer | None:
        """The report of the parts done before a stop, as an answer; None if none was."""
        if self.researcher is None:
            return None
        report = self.researcher.report()
        if not any(section.state == ANSWERED for section in report.sections):
            return None
        return report.as_answer()
