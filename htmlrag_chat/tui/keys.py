"""The chat app's keys: the footer shows them in this order, F1 lists them with their text."""

from __future__ import annotations

from textual.binding import Binding

from htmlrag_chat.tui.screens import key_name

# The footer (compact) shows these in order as far as the width goes: the keys that bring
# the folded panes back come right after Send and Quit, and 80 columns show every key up to
# Copy answer (tests/tui/test_app.py draws it).
KEYS: tuple[Binding, ...] = (
    Binding(
        "ctrl+l", "sources", "Sources",
        tooltip="Show the selected answer's sources and go to them (again: hide them)",
    ),
    Binding(
        "ctrl+o", "history", "History",
        tooltip="Show the saved conversations and go to them (again: hide them)",
    ),
    Binding("f1", "help", "Help", tooltip="This list"),
    Binding("escape", "cancel", "Stop", tooltip="Stop the running question (else: back "
            "to the question box, the panes as the width has them)"),
    Binding("ctrl+y", "copy_answer", "Copy answer", tooltip="Copy the selected answer"),
    Binding("ctrl+n", "new_chat", "New chat", tooltip="Start a new conversation"),
    Binding("ctrl+q", "quit", "Quit", priority=True, tooltip="Quit"),
    Binding("ctrl+s", "export", "Export", tooltip="Save the conversation as Markdown here"),
)  # fmt: skip


# The app's own entries of the command palette: name, what it does, the action it runs.
PALETTE = (
    ("New chat", "Start a new conversation", "new_chat"),
    ("Research", "The question typed, in parts (/research)", "research"),
    ("Stop", "Stop the running question", "cancel"),
    ("Export conversation", "Save it as Markdown in the folder", "export"),
    ("Copy answer", "Copy the selected answer", "copy_answer"),
    ("Sources", "Show the sources, or hide them", "sources"),
    ("History", "Show the conversations, or hide them", "history"),
    ("Help", "List every key", "help"),
)


def help_rows(quit_text: str) -> list[tuple[str, str]]:
    """F1's table: each key as it is written (``Ctrl+L``) and what it does; ``quit_text``
    says what quitting keeps."""
    rows = [
        (key_name(key.key), quit_text if key.action == "quit" else key.tooltip)
        for key in KEYS
        if key.show
    ]
    return [("Enter", "Send the question"), *rows]
