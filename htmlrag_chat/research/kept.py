"""What a research has done, kept in the cache file, so that a rerun asks nothing twice.

A research on a CPU takes minutes; one stopped (Esc, Ctrl+C, a closed laptop) or failed
halfway would otherwise start again from nothing. Each part answered is kept as soon as it
is, and the reader's split of the question too, each under a key of everything that decides
it: the question or the part, the reader and its model, the budget and how pages reach the
reader, the rounds and pages, the correction and judge settings, where it searched (the
web's backends and filters, each document's path, size and modification time). A rerun of
the same research finds them and asks only the parts still missing; a changed document,
another reader or another budget asks again. ``--refresh AGE`` asks again for parts older
than AGE, as it does for searches and pages.

Kept in the derived artefacts of the cache file (``Store.put_derived``); in a replay the
cache file is read-only, so they go to the side file of derived artefacts, as embeddings
and documents do, and when that cannot be used, nowhere (said once): the research then
simply runs whole.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from htmlrag_chat.agent.answer import Answer, stored_source
from htmlrag_chat.agent.research import Dropped, Research
from htmlrag_chat.base.paths import shown_path
from htmlrag_chat.evidence.records import stored_claims
from htmlrag_chat.store.db import Store, StoreError
from htmlrag_chat.store.embeddings import derived_cache_path

if TYPE_CHECKING:
    from htmlrag_chat.agent.loop import Agent

PART = "research-part"  # the derived artefacts' kind of a part's answer
SPLIT = "research-split"  # and of a question's parts, as the reader split it
VERSION = 1  # a release that keeps parts otherwise bumps it, and every part is asked again


@dataclass
class ResearchCache:
    """Parts answered and questions split, by key, in ``store`` or (read-only) its side file."""

    store: Store
    notice: Callable[[str], None]
    max_age: float | None = None  # --refresh: older entries are asked again
    _side: Store | None = field(default=None, init=False, repr=False)
    _failed: bool = field(default=False, init=False, repr=False)

    def get(self, kind: str, key: str) -> Any:
        """The record kept under ``key``, or None (none, too old, or not readable)."""
        store = self._store()
        if store is None:
            return None
        try:
            value = store.get_derived(kind, key)
        except StoreError:
            return None
        if value is None:
            return None
        try:
            kept = json.loads(value)
        except ValueError:
            return None
        if not isinstance(kept, dict) or not isinstance(kept.get("at"), int | float):
            return None
        if self.max_age is not None and time.time() - kept["at"] > self.max_age:
            return None
        return kept.get("record")

    def put(self, kind: str, key: str, record: object) -> None:
        store = self._store()
        if store is None:
            return
        value = json.dumps({"at": time.time(), "record": record}, ensure_ascii=False)
        try:
            store.put_derived(kind, key, value.encode("utf-8"))
        except StoreError as error:
            self._give_up(store, error)

    def close(self) -> None:
        if self._side is not None:
            self._side.close()
            self._side = None

    def _store(self) -> Store | None:
        if self._failed:
            return None
        if not self.store.readonly:
            return self.store
        if self._side is None:
            try:
                self._side = Store.open(derived_cache_path())
            except StoreError as error:
                self._give_up(None, error)
                return None
        return self._side

    def _give_up(self, store: Store | None, error: StoreError) -> None:
        self._failed = True
        where = shown_path(store.path if store is not None else derived_cache_path())
        reason = error.__cause__ or error
        self.notice(
            f"{where} cannot keep this research's parts ({reason}): a rerun asks them again"
        )


def key(*parts: object) -> str:
    """A key for what decides a record: the parts as JSON, hashed."""
    text = json.dumps([VERSION, *parts], ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def part_key(agent: Agent, part: str) -> str:
    """Everything that decides the answer to ``part`` on ``agent``."""
    return key("part", part, settings_of(agent))


def split_key(agent: Agent, question: str, max_parts: int) -> str:
    reader = agent.reader
    return key("split", question, max_parts, reader.kind, reader.name)


def settings_of(agent: Agent) -> dict[str, object]:
    """The agent's settings that change an answer, each source's state included (the
    documents' files: a part is asked again when one changed)."""
    keys = {source.name: source.key() for source in agent.sources}
    return {
        "reader": [agent.reader.kind, agent.reader.name],
        "stages": [[s.scorer.name, s.budget, s.max_words] for s in agent.stages],
        "rendering": agent.rendering,
        "rounds": agent.rounds,
        "pages": agent.max_pages,
        "queries": agent.max_queries,
        "checker": [agent.checker.correct, agent.checker.judge is not None],
        "web": keys.pop("web", False),
        "documents": keys.pop("documents", []),
        **keys,
    }


def answer_record(answer: Answer) -> dict[str, Any]:
    """An answer as it is kept: its ``--json`` record and its Markdown."""
    return {"json": answer.to_json(), "markdown": answer.markdown}


def kept_answer(record: object) -> Answer | None:
    """The answer a record holds, or None for one this code cannot read (an older release,
    a damaged row): that part is then asked again."""
    if not isinstance(record, Mapping):
        return None
    try:
        data, markdown = record["json"], record["markdown"]
        return Answer(
            question=str(data["question"]),
            text=str(data["answer"]),
            written=_written(data),
            reader=str(data["reader"]),
            model=str(data["model"]),
            claims=stored_claims(data["sentences"]),
            removed_citations=int(data["removed_citations"]),
            flags=[str(flag) for flag in data["flags"]],
            research=Research(
                sources=[stored_source(source) for source in data["sources"]],
                queries=[str(query) for query in data["queries"]],
                skipped=[Dropped(s["query"], s["reason"]) for s in data["skipped_queries"]],
                left_out=[Dropped(d["url"], d["reason"]) for d in data["left_out"]],
                rounds=int(data["rounds"]),
                timings={str(k): float(v) for k, v in data["timings_ms"].items()},
                notes=[str(note) for note in data["notes"]],
            ),
            first_token_ms=data["first_token_ms"],
            total_ms=float(data["total_ms"]),
            markdown=str(markdown),
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _written(data: Mapping[str, Any]) -> str:
    written = str(data["answer_as_written"])
    return "" if written == data["answer"] else written
