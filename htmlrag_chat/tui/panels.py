"""The side panels: the selected answer's numbered sources, and the saved conversations."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, ClassVar
from urllib.parse import urlsplit

from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option, OptionDoesNotExist

from htmlrag_chat.base.safety import one_line, terminal_safe
from htmlrag_chat.base.sources import cited_first
from htmlrag_chat.reader import Source
from htmlrag_chat.tui.texts import last_active


def openable(url: str) -> bool:
    """Only web pages go to the browser: a source URL is data from the web."""
    return urlsplit(url).scheme in {"http", "https"}


class SourcesPanel(OptionList):
    """The sources of the selected answer: those it cites (title, site or the file name of
    one of the user's documents, URL), then, under a line that says so, those it read
    without citing (number and site, dimmed). Before the answer ends (``cited`` None) every
    source is listed in full, in number order. Only web pages open in the browser: a local
    file's address is copied, never opened (opening a file may run it)."""

    BORDER_TITLE = "Sources"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o,enter", "open", "Open in browser"),
        Binding("c", "copy", "Copy URL"),
    ]

    class Open(Message):
        def __init__(self, source: Source) -> None:
            super().__init__()
            self.source = source

    class Copy(Message):
        def __init__(self, source: Source) -> None:
            super().__init__()
            self.source = source

    def __init__(self) -> None:
        super().__init__(markup=False)
        self.sources: tuple[Source, ...] = ()

    def show(self, sources: Sequence[Source], cited: Collection[int] | None = None) -> None:
        self.sources = tuple(sources)
        if cited is None or not cited:  # not answered yet, or nothing cited: judge them all
            self.set_options(_source_option(source) for source in self.sources)
            self.border_subtitle = f"{len(self.sources)}" if self.sources else "none"
            return
        used, read = cited_first(self.sources, cited)
        options = [_source_option(source) for source in used]
        if read:
            options.append(Option(Content(f"read, not cited ({len(read)}):"), disabled=True))
            options += [_read_option(source) for source in read]
        self.set_options(options)
        self.border_subtitle = f"{len(used)} cited · {len(self.sources)} read"

    def highlight(self, number: int) -> bool:
        """Highlight source ``number``; False when the answer has no such source."""
        try:
            self.highlighted = self.get_option_index(f"source-{number}")
        except OptionDoesNotExist:
            return False
        return True

    @property
    def current(self) -> Source | None:
        option = self.highlighted_option
        numbers = {f"source-{source.number}": source for source in self.sources}
        return numbers.get(option.id or "") if option is not None else None

    def action_open(self) -> None:
        if self.current is not None:
            self.post_message(self.Open(self.current))

    def action_copy(self) -> None:
        if self.current is not None:
            self.post_message(self.Copy(self.current))


def _source_option(source: Source) -> Option:
    title = one_line(source.title) or "Untitled"
    url = terminal_safe(source.url)
    where = terminal_safe(source.where)
    prompt = Content.assemble(
        (f"[{source.number}] ", "bold"),
        title,
        "\n",
        (where + (f" · {source.date}" if source.date else ""), "italic"),
        "\n",
        (url, "dim"),
    )
    return Option(prompt, id=f"source-{source.number}")


def _read_option(source: Source) -> Option:
    """A source read and not cited: its number and site on one dim line."""
    return Option(
        Content.assemble((f"[{source.number}] {terminal_safe(source.where)}", "dim")),
        id=f"source-{source.number}",
    )


class HistoryPanel(OptionList):
    """Saved conversations, most recently active first: each title over when it was last
    active and how many questions it holds (titles repeat: the same question asked twice),
    the open one marked."""

    BORDER_TITLE = "History"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select", "Open", show=False),
        Binding("r", "rename", "Rename"),
        Binding("d,delete", "delete", "Delete"),
    ]

    class Rename(Message):
        def __init__(self, conversation_id: int) -> None:
            super().__init__()
            self.conversation_id = conversation_id

    class Delete(Message):
        def __init__(self, conversation_id: int) -> None:
            super().__init__()
            self.conversation_id = conversation_id

    def __init__(self) -> None:
        super().__init__(markup=False)

    def show(
        self, conversations: Sequence[dict[str, Any]], current: int | None, now: float
    ) -> None:
        self.set_options(_conversation_option(c, c["id"] == current, now) for c in conversations)
        ids = [c["id"] for c in conversations]
        if current in ids:
            self.highlighted = ids.index(current)

    @property
    def current(self) -> int | None:
        option = self.highlighted_option
        return int(option.id) if option is not None and option.id else None

    def action_rename(self) -> None:
        if self.current is not None:
            self.post_message(self.Rename(self.current))

    def action_delete(self) -> None:
        if self.current is not None:
            self.post_message(self.Delete(self.current))


def _conversation_option(conversation: dict[str, Any], open_now: bool, now: float) -> Option:
    turns = conversation.get("turns", 0)
    questions = f"{turns} question{'' if turns == 1 else 's'}"
    meta = f"{last_active(conversation['updated_at'], now)} · {questions}"
    prompt = Content.assemble(
        ("● " if open_now else "", "bold"),
        one_line(conversation["title"]) or "Untitled",
        "\n",
        (meta + (" · open" if open_now else ""), "dim"),
    )
    return Option(prompt, id=str(conversation["id"]))
