"""Which side panes show: by the terminal's width, unless a key asked otherwise.

The History (24 columns) and Sources (40) panes beside the transcript leave it 16 columns
on an 80-column terminal, a word per line. So the screen carries a width class
(``ChatApp.HORIZONTAL_BREAKPOINTS``) and the stylesheet hides the History pane below
``WIDE`` columns and both below ``MEDIUM``: at 80 columns the transcript has them all.
Ctrl+O and Ctrl+L (in the footer and F1) bring a hidden pane back and go to it; pressed
in the pane, they hide it again; Esc hands the layout back to the width.
"""

from __future__ import annotations

from textual.widget import Widget

MEDIUM = 100  # from here the Sources pane shows (the transcript keeps 60+ columns)
WIDE = 140  # from here the History pane shows too
BREAKPOINTS = [(0, "-narrow"), (MEDIUM, "-medium"), (WIDE, "-wide")]


class Panes:
    """The side panes of ``body``, each named by its class suffix (``show-sources``)."""

    def __init__(self, body: Widget) -> None:
        self.body = body

    def toggle(self, pane: Widget, name: str) -> bool:
        """Show ``pane`` and go to it; if it is shown and focused already, hide it.
        Returns whether it is now shown (the caller then moves the focus elsewhere)."""
        if pane.display and pane.has_focus:
            self.body.remove_class(f"show-{name}")
            self.body.add_class(f"hide-{name}")
            return False
        self.body.remove_class(f"hide-{name}")
        self.body.add_class(f"show-{name}")
        pane.focus()
        return True

    def by_width(self) -> None:
        """Forget what the keys asked: the terminal's width decides again."""
        for name in ("history", "sources"):
            self.body.remove_class(f"show-{name}", f"hide-{name}")
