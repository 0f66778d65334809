"""A research question taken apart into the questions it asks, each looked up on its own.

A question written as a list of questions ("Who founded A, and how much did B cost?", "In
what year ..., what share ..., and in how many ...?", the same in German, French and Spanish)
is split where its writer split it (``written_parts``), word for word and without a call to
the reader: Qwen 1.5B, asked to split "Who founded The Reckoning Crew, the South Carolina
political organizing group ..., and who was ...?", dropped the group's description, and the
bare name then found another page. Any other question goes to the reader.

The reader splits it (``prompts/parts.md``): one ``PART:`` line per question, a line format
because small models break JSON; bullets, numbering ("PART 2:"), bold and quotes are
tolerated, and a line that only echoes the request is no part. A simple question stays one
part; one part back is a rephrasing, and the words the user typed are the better question
(as for a plan's queries). A part whose words another part holds all of is that part with
its details dropped (Qwen 1.5B wrote "Who was the first Somali American mayor?" beside the
same question with its city and year, and answered it with another person): it goes, and
so does a part that restates the whole question beside its parts. A reply with no part at
all means one part too, with a note. The
user may give the parts instead (``--part``), which is how the extractive reader, which
cannot split anything, researches in parts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from htmlrag_chat.agent.plan import marked_lines
from htmlrag_chat.base.errors import UserError
from htmlrag_chat.base.events import EventSink, Notice, ReaderBusy, stage
from htmlrag_chat.base.prompts import load_prompt
from htmlrag_chat.reader import ChatModel
from htmlrag_chat.reader.layout import parts_messages
from htmlrag_chat.settings.kinds import Integer
from htmlrag_chat.settings.tree import find

_BOUNDS = find("research.max_parts").kind
assert isinstance(_BOUNDS, Integer)
MAX_PARTS = _BOUNDS.most  # a research asks at most this many questions (settings/tree.py)
SPLIT_TOKENS = 256  # five questions of some thirty words, with room for a preamble
LONGEST_PART = 300  # characters: longer is a paragraph, not a question
_MARKER = r"part(?:\s*\d+)?"  # "PART:", and "PART 2:" as some models number them


# Words that open a question (the first three words of a clause hold one: "in what year",
# "by how much", "und mit wie vielen"), and the conjunctions that join the last question of
# a list to the others; English, German, French and Spanish.
_OPENERS = frozenset(
    """
    who whom whose what which when where why how
    wer wen wem wessen was welche welcher welches welchen welchem wann wo woher wohin wie
    warum weshalb wieso qui quoi quel quelle quels quelles quand où comment pourquoi combien
    quién quiénes qué cuál cuáles cuándo dónde cómo cuánto cuánta cuántos cuántas
    """.split()
)
_CONJUNCTIONS = frozenset({"and", "und", "et", "y"})
# A later question that points back ("and when did she ...") is no question on its own.
_BACK_REFERENCES = frozenset("he she it they him her his its their them".split())
_OPENING_WORDS = 3
_SHORTEST_CLAUSE = 4  # words: "how much does X cost"; shorter is a fragment
# Where one question ends and the next begins: after its "?" (or a ";" joining two).
_QUESTION_END = re.compile(r"(?<=[?;])\s+")
_SEPARATOR = re.compile(
    rf"(,\s+|\s+(?=(?:{'|'.join(_CONJUNCTIONS)})\s+(?:{'|'.join(_OPENERS)})\b))", re.IGNORECASE
)


def written_parts(question: str, max_parts: int = MAX_PARTS) -> tuple[str, ...]:
    """The questions ``question`` lists one after another, as written, when it plainly is
    such a list: questions one after another ("Who designed A? When was B built?", or
    joined by ";"), each a question of its own or a list of its own; or one question that
    lists them (``_listed``). None of them points back with a pronoun ("When was it
    built?"); at most ``max_parts``. Otherwise none, and the reader splits it."""
    sentences = [s for s in _QUESTION_END.split(question.strip()) if s.strip()]
    if len(sentences) == 1:
        return _listed(sentences[0], max_parts)
    parts: list[str] = []
    for sentence in sentences:
        words = sentence.split()
        conjunction = bool(words) and words[0].casefold() in _CONJUNCTIONS
        text = " ".join(words[conjunction:])
        own = text.lstrip("¿¡").rstrip("?;").strip()
        own_words = own.split()
        if listed := _listed(text, max_parts):
            parts += listed
        elif len(own_words) >= _SHORTEST_CLAUSE and _opens_question(own_words):
            parts.append(_asked(own, text.startswith("¿")))
        else:
            return ()
    if not 1 < len(parts) <= max_parts or any(_points_back(part) for part in parts[1:]):
        return ()
    return tuple(parts)


def _listed(question: str, max_parts: int) -> tuple[str, ...]:
    """The questions one question lists: a clause starts where a question word opens a
    comma's or a conjunction's piece, once the clause before has asked something ("When
    planting a hydrangea in a container, how much ..." is one clause: "when" + a gerund
    opens a circumstance); the last one follows a conjunction; none is shorter than four
    words or points back with a pronoun; at most ``max_parts``. Otherwise none."""
    pieces = _SEPARATOR.split(question.strip().lstrip("¿¡").rstrip("?;").strip())
    clauses: list[str] = []
    asked: list[bool] = []  # whether each clause has opened a question yet
    joined: list[bool] = []  # whether each clause follows a conjunction
    for index in range(0, len(pieces), 2):
        words = pieces[index].split()
        conjunction = bool(words) and words[0].casefold() in _CONJUNCTIONS
        opens = _opens_question(words[conjunction:])
        if clauses and not (opens and asked[-1]):
            clauses[-1] += pieces[index - 1] + pieces[index]
            asked[-1] = asked[-1] or opens
            continue
        clauses.append(" ".join(words[conjunction:]))
        asked.append(opens)
        joined.append(conjunction)
    if (
        not 1 < len(clauses) <= max_parts
        or not all(asked)
        or not joined[-1]
        or any(len(clause.split()) < _SHORTEST_CLAUSE for clause in clauses)
        or any(_points_back(clause) for clause in clauses[1:])
    ):
        return ()
    opened = question.lstrip().startswith("¿")
    return tuple(_asked(clause, opened) for clause in clauses)


def _asked(clause: str, opened: bool) -> str:
    """A clause written as a question of its own: capitalised, its "?" and, where the
    question opened with one (Spanish), its "¿"."""
    return ("¿" if opened else "") + clause[:1].upper() + clause[1:] + "?"


def _opens_question(words: Sequence[str]) -> bool:
    opening = [word.casefold().strip("¿¡") for word in words[: _OPENING_WORDS + 1]]
    for at, word in enumerate(opening[:_OPENING_WORDS]):
        if word in _OPENERS:
            following = opening[at + 1] if at + 1 < len(opening) else ""
            return not following.endswith("ing")
    return False


def _points_back(clause: str) -> bool:
    """Whether a pronoun comes before the clause names anything (a capitalised word after
    its first): "and when did she retire" does, "what did Tom Francis call his" does not."""
    for word in re.findall(r"\w+", clause)[1:]:
        if word[:1].isupper():
            return False
        if word in _BACK_REFERENCES:
            return True
    return False


def given_parts(parts: Sequence[str], max_parts: int = MAX_PARTS) -> tuple[str, ...]:
    """The parts the user gave, each on one line and once; too many or an empty one is a
    usage error."""
    cleaned = [" ".join(part.split()) for part in parts]
    if any(not part for part in cleaned):
        raise UserError("a --part is empty")
    if any(len(part) > LONGEST_PART for part in cleaned):
        raise UserError(f"a --part is over {LONGEST_PART} characters: give one question each")
    unique = tuple(dict.fromkeys(cleaned))
    if len(unique) > max_parts:
        raise UserError(f"{len(unique)} parts given: a research asks at most {max_parts}")
    return unique


def parse_parts(reply: str, max_parts: int = MAX_PARTS, request: str = "") -> tuple[str, ...]:
    """The parts of a split reply, at most ``max_parts``; none when it holds no usable
    ``PART:`` line (``request``: the prompt's own words, which alone make no part)."""
    return distinct_parts(marked_lines(reply, _MARKER, request, LONGEST_PART))[:max_parts]


def distinct_parts(parts: Sequence[str]) -> tuple[str, ...]:
    """``parts`` less the whole question restated beside its parts (a part that holds the
    words of every other, when there are two others or more) and less each part whose
    words another part holds (the first of two with the same words stays), in order."""
    words = [set(re.findall(r"\w+", part.casefold())) for part in parts]
    others = [[j for j in range(len(parts)) if j != i] for i in range(len(parts))]
    whole = {
        i
        for i, rest in enumerate(others)
        if len(rest) > 1 and all(words[j] <= words[i] for j in rest)
    }
    kept = [i for i in range(len(parts)) if i not in whole]
    narrower = {
        i
        for i in kept
        for j in kept
        if j != i and words[i] <= words[j] and (words[i] != words[j] or j < i)
    }
    return tuple(parts[i] for i in kept if i not in narrower)


async def split_question(
    chat: ChatModel | None, question: str, max_parts: int, emit: EventSink
) -> tuple[str, ...]:
    """The parts of ``question`` as ``chat`` splits it; the question alone when it is one
    part, when the reply cannot be read, or when there is no LLM to ask (with a note)."""
    if chat is None:
        emit(Notice("the extractive reader cannot split a question: give its parts with --part"))
        return (question,)
    if max_parts == 1:
        return (question,)
    with stage(emit, "split") as counts:
        messages = parts_messages(question, max_parts)
        emit(ReaderBusy("prefill", chat.pending_tokens(messages)))
        reply = "".join([chunk async for chunk in chat.stream(messages, SPLIT_TOKENS)])
        request = load_prompt("parts").format(question="", max_parts="")
        parts = parse_parts(reply, max_parts, request)
        counts["parts"] = len(parts)
    if not parts:
        emit(Notice("the reader's split of the question could not be read: it is one part"))
    return parts if len(parts) > 1 else (question,)
