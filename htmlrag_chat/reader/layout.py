"""One prompt layout for every LLM call of a conversation, so that each call reuses the last.

On a CPU the reader's wait is its prefill: reading a 4,000-token context takes tens of
seconds for an 8B model. Every call of a question (the query rewrite, the sufficiency check,
the answer) and every turn of a conversation is therefore laid out as the continuation of
the one before: the same system text, then the earlier turns, then the numbered sources,
then the question, and only then what differs (the check's instruction, or nothing for the
answer). A llama.cpp state kept in this process, or a server's prefix cache, then evaluates
only the tokens after the longest shared prefix: the check and the answer share everything
up to the question, and a follow-up shares the whole conversation before it.

The sources appear once, in the user message of the turn that brought them; a turn that
reuses them ("shorter please") asks just its question. When a follow-up brings new sources,
earlier turns keep their questions and answers but not their old sources, which would
otherwise fill the window.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from htmlrag_chat.base.prompts import load_prompt, today
from htmlrag_chat.base.safety import text_safe
from htmlrag_chat.html.rendering import render
from htmlrag_chat.lexical.analysis import tokens
from htmlrag_chat.lexical.language import language_name
from htmlrag_chat.reader import Message, Source, Turn
from htmlrag_chat.reader.citations import escape_markers

# Code in a page is quoted as code, brackets and all: its x[1] is left as it is.
_CODE_ELEMENT = re.compile(r"<(pre|code|kbd|samp)\b[^>]*>.*?</\1>", re.DOTALL | re.IGNORECASE)


def render_sources(sources: Sequence[Source]) -> str:
    """The sources as the reader reads them, each in its rendering (HTML, Markdown or text).
    Chat-template control tokens in page text must stay text: HTML serialization escapes
    "<" in text, but titles, URLs and the other renderings are raw, and a server's template
    cannot be asked to sanitize, so the markers themselves are broken (``text_safe``: with
    the controls, overrides and tag characters a model may obey)."""
    if not sources:
        return "(no sources)"
    return "\n\n".join(
        text_safe(f"[{source.number}] {escape_markers(source.title or 'Untitled')}\n"
        f"URL: {source.url}\n{_published(source)}{source_content(source)}")
        for source in sources
    )  # fmt: skip


def source_content(source: Source) -> str:
    """What the reader gets of a source's pruned HTML: its own markers escaped outside code
    (before rendering, while code is still marked up), then rendered."""
    return render(_escape_prose_markers(source.html), source.rendering)


def _published(source: Source) -> str:
    """The source header line with the page's declared publication day, if any; a local
    file's day is the one it was last modified."""
    if not source.date:
        return ""
    return f"{'Modified' if source.local else 'Published'}: {source.date}\n"


def _escape_prose_markers(html: str) -> str:
    """A page's own footnote markers (``[3]``) escaped outside its code, so that the reader,
    which cites sources as ``[n]``, cannot copy one as a citation of source 3."""
    pieces, done = [], 0
    for code in _CODE_ELEMENT.finditer(html):
        pieces += [escape_markers(html[done : code.start()]), code[0]]
        done = code.end()
    return "".join([*pieces, escape_markers(html[done:])])


def answer_messages(
    question: str, sources: Sequence[Source], turns: Sequence[Turn] = ()
) -> list[Message]:
    """The answer's prompt: the conversation, then the sources (unless an earlier turn
    already holds them), the question and the answer's reminder."""
    prefix, placed = _conversation(turns, sources)
    return [*prefix, Message("user", _answering(question, sources, placed))]


def plain_messages(question: str, sources: Sequence[Source]) -> list[Message]:
    """The plain prompt the product's is measured against (``eval answers --prompts
    plain``): a three-line system text asking for one cited sentence, then the sources and
    the question, nothing else."""
    system = load_prompt("plain").strip()
    return [Message("system", system), Message("user", _ask(question, sources, placed=False))]


def check_messages(
    question: str, sources: Sequence[Source], turns: Sequence[Turn] = (), topic: str = ""
) -> list[Message]:
    """The sufficiency check: the answer's prompt up to its question, then the instruction;
    ``topic``, a follow-up's standalone rewrite, is named when it differs."""
    prefix, placed = _conversation(turns, sources)
    hint = f" ({topic})" if topic and topic != question else ""
    instruction = load_prompt("sufficiency").format(topic=hint).strip()
    return [*prefix, Message("user", f"{_ask(question, sources, placed)}\n{instruction}")]


def judge_messages(
    question: str,
    sources: Sequence[Source],
    turns: Sequence[Turn],
    answer: str,
    sentence: str,
    passage: str,
    number: int,
) -> list[Message]:
    """The judge's question (``prompts/judge.md``): the answer's prompt and the answer as the
    reader wrote it, then whether source ``number``'s ``passage`` states ``sentence``. It
    continues the answer's own call, so the reader's kept state (or a server's prefix
    cache) reads only the question."""
    return [
        *answer_messages(question, sources, turns),
        Message("assistant", answer),
        Message("user", _judging(sentence, passage, number)),
    ]


def judge_alone_messages(sentence: str, passage: str, number: int) -> list[Message]:
    """The judge's question on its own, for a model that did not write the answer (a judge
    named for a reader that cannot judge): the system text and the question, a hundred
    tokens or so, where the answer's prompt would cost that model a whole prefill."""
    system = load_prompt("reader").format(today=today()).strip()
    return [Message("system", system), Message("user", _judging(sentence, passage, number))]


def _judging(sentence: str, passage: str, number: int) -> str:
    asked = load_prompt("judge").format(number=number, passage=passage, sentence=sentence)
    return text_safe(asked.strip())


def rewrite_messages(message: str, turns: Sequence[Turn], max_queries: int) -> list[Message]:
    """The query rewrite: the conversation as the last answer left it, then the request."""
    prefix, _ = _conversation(turns, turns[-1].sources if turns else ())
    request = load_prompt("rewrite").format(message=message, max_queries=max_queries).strip()
    return [*prefix, Message("user", request)]


def parts_messages(question: str, max_parts: int) -> list[Message]:
    """A research's split (``prompts/parts.md``): the system text, then the question and
    the request to take it apart into at most ``max_parts`` questions, one a line."""
    prefix, _ = _conversation((), ())
    request = load_prompt("parts").format(question=question, max_parts=max_parts).strip()
    return [*prefix, Message("user", request)]


def _conversation(turns: Sequence[Turn], sources: Sequence[Source]) -> tuple[list[Message], bool]:
    """The system text and the earlier turns; the first of the trailing turns that used
    ``sources`` carries them. Whether they were placed."""
    # Today's date, so that "latest" and "this year" mean something (it changes once a day,
    # so the prefix a cache reuses stays the same between the calls of a day).
    messages = [Message("system", load_prompt("reader").format(today=today()).strip())]
    start = len(turns)
    while start > 0 and tuple(turns[start - 1].sources) == tuple(sources) and sources:
        start -= 1
    for index, turn in enumerate(turns):
        shown = sources if index == start else ()
        messages += [
            Message("user", _answering(turn.question, shown, placed=not shown)),
            Message("assistant", turn.answer),
        ]
    return messages, start < len(turns)


def _answering(question: str, sources: Sequence[Source], placed: bool) -> str:
    """An answer's user message: the question, then a reminder of how to answer (a small
    model heeds the last words it read: the rules are far above, before the sources). An
    earlier turn is written the same way, so a follow-up continues it word for word; the
    check stops before the reminder, so it shares everything up to the question."""
    return f"{_ask(question, sources, placed)}\n{reminder(question)}"


def reminder(question: str) -> str:
    """How to answer, after the question (``prompts/answer.md``): in the question's language,
    named where its words make it plain (``language_name``), and citing."""
    name = language_name(tokens(question)[0])
    language = f"{name}, the language of the question" if name else "the language of the question"
    return load_prompt("answer").format(language=language).strip()


def _ask(question: str, sources: Sequence[Source], placed: bool) -> str:
    """A user message: the sources unless they are already above, then the question."""
    asked = load_prompt("question").format(question=question)
    if placed:
        return asked.strip()
    return (load_prompt("sources").format(sources=render_sources(sources)) + asked).strip()
