"""Modal screens: the keys, renaming a conversation, confirming a deletion."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Markdown, Static

HELP = """\
# htmlrag-chat

Ask a question and press **Enter**. The app searches the web, downloads the pages, prunes
them to what matters for the question (BM25 and an embedding model, then a small generative
model when it is installed) and a reader model answers with citations like [1] to the
numbered sources on the right: those it cites, then those it read. On a narrow terminal
the side panes fold away: Ctrl+L and Ctrl+O bring them back.
Follow-up questions use the conversation.

| Key | Does |
|---|---|
{keys}

**Sources panel**: Up/Down move, **o** or Enter opens the page in the browser, **c** copies
its URL. Click an answer (or Tab to it) to list its sources; click a citation, or press its
number on a selected answer, to highlight that source.

**History panel**: Enter opens a conversation, **r** renames it, **d** deletes it.

**Ctrl+P** opens the command palette: every action above, and the themes.
"""


def key_name(key: str) -> str:
    """``ctrl+q`` -> ``Ctrl+Q``, ``escape`` -> ``Esc``: keys as the help table writes them."""
    names = {"escape": "Esc", "enter": "Enter"}
    return "+".join(names.get(part, part.capitalize()) for part in key.split("+"))


class HelpScreen(ModalScreen[None]):
    """F1: every key. How to close it is on its border, where a terminal too short for the
    whole text (80x24) still shows it."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,f1,q", "dismiss", "Close")]
    CLOSE = "Esc, F1 or q closes this"

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self.keys = keys

    def compose(self) -> ComposeResult:
        rows = "\n".join(f"| {key} | {description} |" for key, description in self.keys)
        with Vertical(id="dialog") as dialog:
            dialog.border_title = self.CLOSE
            yield Markdown(HELP.format(keys=rows))


class RenameScreen(ModalScreen[str | None]):
    """Ask for a conversation's new title; dismissed with it, or None when cancelled."""

    AUTO_FOCUS = "#title"

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Cancel")]

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title_now = title

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Content("Rename the conversation (Enter saves, Esc cancels)"))
            yield Input(self.title_now, id="title")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        title = " ".join(event.value.split())
        self.dismiss(title or None)


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question; Enter on the focused button, y or n, Esc says no."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,n", "dismiss(False)", "No"),
        Binding("y", "dismiss(True)", "Yes"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Content(self.question))
            with Horizontal(classes="buttons"):
                yield Button("Delete", variant="error", id="yes")
                yield Button("Keep", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")
