"""After the last answer token: each sentence with its evidence, judged where words cannot
tell, and citations the check proves wrong corrected.

Three steps, each after the one before and none before the first token:

1. ``evidence.claims.check_answer``: the passages of the sources that back each sentence,
   by terms and numbers (milliseconds, in the worker thread).
2. ``evidence.judging``: the quotes whose score is in the uncertain band are read by a
   judge, the reader itself asked Yes or No in a message that continues its answer's call
   (so its kept state, or a server's prefix cache, reads a few dozen tokens), or a model
   named to judge for a reader that cannot, asked on its own.
3. ``evidence.correction``: a sentence that its cited source does not back and another
   does is shown citing that one, marked; one that cites nothing gets the source found.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from htmlrag_chat.agent.worker import Worker
from htmlrag_chat.base.events import EventSink, stage
from htmlrag_chat.evidence.claims import Claim, check_answer
from htmlrag_chat.evidence.correction import correct, corrected_answer
from htmlrag_chat.evidence.judging import BAND, Pair, judge_claims
from htmlrag_chat.reader import ChatModel, Source, Turn
from htmlrag_chat.reader.layout import judge_alone_messages, judge_messages
from htmlrag_chat.settings.tree import default


@dataclass(frozen=True)
class Checked:
    """The answer as shown after the check: its claims, and its text and Markdown with the
    corrected citations (as written when nothing was corrected)."""

    claims: list[Claim]
    text: str
    markdown: str


@dataclass
class Checker:
    """What runs after an answer: the check, the judge (when there is one) and the
    correction (when it is on)."""

    judge: ChatModel | None = None  # asks the uncertain sentences; None: words decide alone
    alone: bool = False  # the judge did not write the answer: its question stands alone
    correct: bool = default("reader.correct_citations")

    async def check(
        self,
        worker: Worker,
        emit: EventSink,
        question: str,
        topic: str,
        sources: list[Source],
        history: Sequence[Turn],
        text: str,
        markdown: str,
    ) -> Checked:
        """``text`` and ``markdown`` (the answer to ``question``, read as an answer about
        ``topic``) checked against ``sources``."""
        band = BAND if self.judge is not None else None
        claims = await worker.run(emit, _lexical, topic, markdown, sources, band)
        if self.judge is not None:
            claims = await self._judged(emit, question, sources, history, text, claims)
        if not self.correct:
            return Checked(claims, text, markdown)
        claims = correct(claims)
        numbers = [source.number for source in sources]
        return Checked(
            claims,
            corrected_answer(text, claims, numbers),
            corrected_answer(markdown, claims, numbers),
        )

    async def ask(
        self,
        question: str,
        sources: list[Source],
        history: Sequence[Turn],
        answer: str,
        pairs: Sequence[Pair],
    ) -> list[float | None]:
        """The judge's probability that each pair's passage states its sentence: its
        question continues the answer's call (``answer`` as the reader wrote it), or,
        for a judge that did not write it, stands alone."""
        judge = self.judge
        assert judge is not None
        if self.alone:
            prompts = [judge_alone_messages(p.sentence, p.passage, p.source) for p in pairs]
        else:
            prompts = [
                judge_messages(question, sources, history, answer, p.sentence, p.passage, p.source)
                for p in pairs
            ]
        return await judge.yes_probabilities(prompts)

    async def _judged(
        self,
        emit: EventSink,
        question: str,
        sources: list[Source],
        history: Sequence[Turn],
        answer: str,
        claims: list[Claim],
    ) -> list[Claim]:
        with stage(emit, "judge") as counts:

            async def ask(pairs: Sequence[Pair]) -> list[float | None]:
                counts["pairs"] = len(pairs)
                return await self.ask(question, sources, history, answer, pairs)

            judged = await judge_claims(claims, ask)
            counts["no"] = sum(claim.judged is not None and not claim.supported for claim in judged)
        return judged


def _lexical(
    topic: str,
    markdown: str,
    sources: list[Source],
    band: tuple[float, float] | None,
    emit: EventSink,
) -> list[Claim]:
    """Each sentence of the answer with the passages of the sources that back it, read as
    answers about ``topic`` (worker thread)."""
    with stage(emit, "cite") as counts:
        claims = check_answer(topic, markdown, sources, band=band)
        counts.update(
            sentences=len(claims),
            unsupported=sum(not claim.supported for claim in claims),
            added=sum(quote.added for claim in claims for quote in claim.backing),
        )
    return claims
