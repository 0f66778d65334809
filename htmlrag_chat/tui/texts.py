"""The chat's own wording: the welcome's mode line, what quitting keeps, the line under each
answer (how it was made) and an error as the chat shows it (what happened, what to do)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from htmlrag_chat.agent.answer import Answer
from htmlrag_chat.base.errors import ModelUnavailable, UserError
from htmlrag_chat.base.safety import one_line, terminal_safe
from htmlrag_chat.evidence.correction import MARK
from htmlrag_chat.reader.choice import no_llm_hint

if TYPE_CHECKING:
    from htmlrag_chat.assembly.wiring import AgentOptions


KEYS_LINE = "Enter sends · Esc stops · F1 lists every key · Ctrl+P opens the command palette"


def welcome(options: AgentOptions, kept: bool, recorded: Sequence[str] = ()) -> str:
    """The chat's first words: what a question does with these options (the web, the
    documents, or a recording and the questions it holds: a recording opened in the app
    answers only those), the keys, then the mode line."""
    own = " and ".join(entry.called for entry, _ in options.named_sources())
    if options.replay:
        reads = "replays the recorded searches and pages"
    elif own and not options.web:
        reads = f"reads {own} (not the web)"
    else:
        reads = "searches the web, reads the pages"
    if own and (options.replay or options.web):
        reads += f" and {own}"
    lines = [
        f"Ask a question. htmlrag-chat {reads}, prunes them to what matters and answers "
        "with numbered citations [n] to its sources."
    ]
    if recorded:
        asked = "; ".join(f"“{one_line(query)}”" for query in recorded)
        lines.append(f"The recording holds the searches for: {asked}")
    return "\n".join([*lines, KEYS_LINE, mode_line(options, kept)])


def mode_line(options: AgentOptions, kept: bool) -> str:
    """The welcome's line: reader, pruner and budget, replay, whether conversations stay."""
    reader = options.reader
    parts = [f"reader: {reader.reader}" + (f" ({reader.model})" if reader.model else "")]
    budget = options.prune.budget or "by reader"
    parts.append(f"pruner: {options.prune.pruner}, budget {budget}")
    for entry, paths in options.named_sources():
        parts.append(f"{entry.listed}: {', '.join(paths)}" + ("" if options.web else " only"))
    if options.replay:
        parts.append("replay: answers come from the recorded cache only, nothing is fetched")
    if not kept:
        parts.append("conversations are not kept after this session")
    return " · ".join(parts)


def header_line(title: str, replayed: str) -> str:
    """The conversation's title, after ``REPLAY <file>`` when the cache ``replayed`` is."""
    title = terminal_safe(title) or "New chat"
    return f"REPLAY {replayed} · {title}" if replayed else title


def last_active(timestamp: float, now: float) -> str:
    """When a conversation was last active, as a person says it: "just now", "5 min ago",
    "today 14:02", "yesterday 09:15", else the day."""
    age = now - timestamp
    if age < 60:
        return "just now"
    if age < 3600:
        return f"{int(age // 60)} min ago"
    then, today = datetime.fromtimestamp(timestamp), datetime.fromtimestamp(now).date()
    if then.date() == today:
        return f"today {then:%H:%M}"
    if then.date() == today - timedelta(days=1):
        return f"yesterday {then:%H:%M}"
    return f"{then:%Y-%m-%d}"


def quit_help(kept: bool) -> str:
    """What quitting keeps: the conversations, unless this session's are scratch."""
    if kept:
        return "Quit (conversations are saved)"
    return "Quit (this session's conversations are not kept)"


def answer_meta(answer: Answer, elapsed: float) -> str:
    """How the answer was made, under it: reader, sources, what the checks found, time."""
    notes = []
    if answer.research.rounds == 0 and answer.sources:
        notes.append("from the earlier answer's sources")
    if answer.removed_citations:
        notes.append(f"{answer.removed_citations} invented citation(s) removed")
    notes.append(f"{elapsed:.1f} s")
    sources = sources_read(len(answer.sources), len(answer.cited_numbers))
    return meta_line(answer.reader, answer.model, sources, answer.flags, notes, answer.corrections)


def stored_meta(stored: dict, cited: int, corrections: Sequence[str] = ()) -> str:
    """The same line for an answer reopened from the store (``reader`` is "kind:model")."""
    reader, _, model = stored["reader"].partition(":")
    sources = sources_read(len(stored["sources"]), cited)
    return meta_line(reader, model, sources, stored["flags"], corrections=corrections)


def sources_read(read: int, cited: int) -> str:
    """How many sources the answer cites of those its reader read."""
    return f"cites {cited} of {read} sources read" if read else "no sources"


def meta_line(
    reader: str,
    model: str,
    sources: str,
    flags: Sequence[str],
    notes: Sequence[str] = (),
    corrections: Sequence[str] = (),
) -> str:
    """How an answer was made, then what the check corrected (after the mark it puts on
    the citations it placed) and what it flags."""
    parts = [reader] if model in ("", reader) else [reader, model]
    parts += [sources, *notes]
    lines = [" · ".join(parts), *(f"{MARK} {line}" for line in corrections)]
    lines += [f"! {flag}" for flag in flags]
    return terminal_safe("\n".join(lines))


def describe(error: BaseException, model: str | None, doing: str = "answer") -> str:
    """An error as the chat shows it: what happened and what to do. Errors a user can act on
    carry their advice; anything else is a bug, said plainly, and the app keeps running."""
    if isinstance(error, ModelUnavailable) and error.next_step:
        return f"Could not {doing}: {error}."
    if isinstance(error, ModelUnavailable):
        hint = no_llm_hint(model)
        return (
            f"Could not {doing}: {error}. {hint[0].upper()}{hint[1:]}; "
            "or --reader extractive answers without a model."
        )
    if isinstance(error, UserError):
        return f"Could not {doing}: {error}"
    return (
        f"Internal error: {type(error).__name__}: {error}. The conversation is saved; "
        "`HTMLRAG_CHAT_DEBUG=1 htmlrag-chat ask ...` shows the traceback."
    )
