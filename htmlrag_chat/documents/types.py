"""Which files are documents, by their name's ending, and the names of the types read.

The extension decides, not the content: a folder of notes holds many files a reader was
never meant to see (images, archives, office files), and sniffing each one would read them
all. Anything else is left out and counted by its extension, for one note per question.
"""

from __future__ import annotations

from pathlib import Path

from htmlrag_chat.base.paths import shown_path

HTML, MARKDOWN, TEXT, PDF = "html", "markdown", "text", "pdf"
KINDS: dict[str, str] = {
    ".html": HTML,
    ".htm": HTML,
    ".xhtml": HTML,
    ".xht": HTML,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".mdown": MARKDOWN,
    ".mkd": MARKDOWN,
    ".txt": TEXT,
    ".text": TEXT,
    ".pdf": PDF,
}
READ = "HTML, Markdown, text and PDF"


def kind_of(path: Path) -> str | None:
    """The kind of document ``path`` is by its extension, or None for a type not read."""
    return KINDS.get(path.suffix.lower())


def type_name(path: Path) -> str:
    """How a skipped file's type is named in the note: its extension (on one line, as any
    part of a name), or what it lacks."""
    return shown_path(path.suffix.lower()) or "no extension"
