"""Rows the code did not write (issue 21): each passes SQLite's checks, none may sink a read.

A property test over a real cache file: one column of a stored search, page or answer is
overwritten with anything SQLite will hold (text, JSON of the wrong shape, numbers, bytes,
JSON nested past the parser's limit), then every way the program reads it back runs: the
web cache, a recording's export, the history as Markdown and as the agent's turns, and
``history show`` through the CLI. Each either reads the row or leaves it out with one note.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from io import StringIO
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from htmlrag_chat.agent.answer import turns_from_messages
from htmlrag_chat.cli import main
from htmlrag_chat.conversations.export import conversation_markdown
from htmlrag_chat.store.db import Store
from htmlrag_chat.store.recording import export_jsonl
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult

URL = "https://a.example/"
COLUMNS = [
    ("searches", "results"), ("pages", "outcome"), ("pages", "headers"), ("pages", "body"),
    ("pages", "charset"), ("pages", "status"), ("answers", "sources"), ("answers", "citations"),
    ("answers", "flags"), ("answers", "text"),
]  # fmt: skip
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["url", "number", "title", "content", "x"]), inner)
    ),
    max_leaves=8,
)
VALUES = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=40),
    st.binary(max_size=40),
    JSON_VALUES.map(json.dumps),
    st.sampled_from(["bogus", "ok", "[" * 5000, '[{"url": "u", "number": "1"}]', "{}", "[]"]),
)


def cache_with_everything(path: Path) -> None:
    """A search, its page and a conversation with an answer citing it."""
    with Store.open(path) as store:
        store.put_search("q", [SearchResult(URL, "A", "about a")])
        body = b"<html><body><p>Paris is the capital of France.</p></body></html>"
        store.put_page(FetchResult(URL, Outcome.OK, status=200, charset="utf-8", body=body))
        _, message = store.save_question(None, "capital?", title="capital?")
        store.add_answer(
            message, reader="extractive:extractive", text="Paris [1].",
            sources=[{"number": 1, "url": URL, "title": "A", "content": "<p>Paris</p>"}],
            citations=[{"sentence": "Paris [1].", "sources": [1]}], flags=["checked"],
        )  # fmt: skip


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("rows") / "template.sqlite3"
    cache_with_everything(path)
    return path.read_bytes()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(column=st.sampled_from(COLUMNS), value=VALUES)
def test_any_value_in_a_column_is_read_or_left_out_never_fatal(template, column, value) -> None:
    table, name = column
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.sqlite3"
        path.write_bytes(template)
        connection = sqlite3.connect(path)
        try:
            with connection:
                connection.execute(f"UPDATE {table} SET {name} = ?", [value])
        except sqlite3.IntegrityError:  # NOT NULL: SQLite itself keeps such rows out
            return
        finally:
            connection.close()
        notes: list[str] = []
        with Store.open(path) as store:
            store.notice = notes.append
            search = store.get_search("q")
            assert search is None or all(isinstance(r.url, str) for r in search)
            page = store.get_page(URL)
            assert page is None or isinstance(page.outcome, Outcome)
            export_jsonl(store, Path(folder) / "out.jsonl.gz")
            messages = store.messages(1)
            turns_from_messages(messages)
            assert conversation_markdown("capital?", messages).startswith("# capital?")
        assert len(notes) == len(set(notes))  # each row named once
        out, err = StringIO(), StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["--cache", str(path), "history", "show", "1"])
        assert code == 0 and "Traceback" not in err.getvalue()
