from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.eval.distractors import PoolPage, load_pool, mix, pick_distractors
from htmlrag_chat.eval.stored import TEXTS, EvalCache, digest
from htmlrag_chat.lexical import bm25_scores

PAGES = Path(__file__).parent.parent / "fixtures" / "pages"
QUESTION = "Under which license is Docker Engine released?"


def pool() -> list[PoolPage]:
    return load_pool(PAGES, EvalCache())


def gold(name: str) -> list[PoolPage]:
    path = PAGES / name
    return [PoolPage(path, digest(path.read_bytes()), "")]


def test_hard_distractors_are_the_pool_pages_bm25_ranks_highest():
    pages = pool()
    chosen = pick_distractors(QUESTION, gold("docker-engine.html"), pages, 3, "hard", "s")
    others = [page for page in pages if page.path.name != "docker-engine.html"]
    scores = bm25_scores(QUESTION, [page.text for page in others])
    best = sorted(range(len(others)), key=lambda i: -scores[i])[:3]
    assert [page.path for page in chosen] == [others[i].path for i in best]
    assert chosen[0].path.name == "docker-pipenv.html"  # the other page about Docker


def test_the_gold_page_is_never_a_distractor_even_under_another_name(tmp_path):
    folder = tmp_path / "pool"
    shutil.copytree(PAGES, folder)
    shutil.copy(folder / "docker-engine.html", folder / "copy-of-docker.html")
    pages = load_pool(folder, EvalCache())
    answer = gold("docker-engine.html")  # the committed file, not the pool's
    for mode in ("hard", "random"):
        chosen = pick_distractors(QUESTION, answer, pages, len(pages), mode, "s")
        assert len(chosen) == len(pages) - 2
        assert all(page.digest != answer[0].digest for page in chosen)


def test_random_distractors_are_seeded_and_reproducible():
    pages, answer = pool(), gold("docker-engine.html")
    first = pick_distractors(QUESTION, answer, pages, 4, "random", "0:q1")
    assert first == pick_distractors(QUESTION, answer, pages, 4, "random", "0:q1")
    draws = {
        tuple(p.path.name for p in pick_distractors(QUESTION, answer, pages, 4, "random", f"{s}"))
        for s in range(8)
    }
    assert len(draws) > 1


def test_the_gold_page_goes_in_at_a_seeded_position():
    pages = pool()
    answer, distractors = pages[:1], pages[1:6]
    positions = set()
    for seed in range(20):
        mixed = mix(answer, distractors, f"{seed}")
        assert mixed == mix(answer, distractors, f"{seed}")
        assert mixed.count(answer[0]) == 1 and len(mixed) == 6
        positions.add(mixed.index(answer[0]))
    assert len(positions) > 2


def test_the_pool_skips_pages_with_no_text_and_keeps_texts_in_the_cache(tmp_path):
    (tmp_path / "a.html").write_text("<p>some words</p>")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.html").write_text("<script>only()</script>")
    (tmp_path / "c.html").write_bytes(b"\x00\x01\x02 binary")
    (tmp_path / "d.txt").write_text("not html")
    store = FakeStore()
    pages = load_pool(tmp_path, EvalCache(store))
    assert [page.path.name for page in pages] == ["a.html"]
    assert pages[0].text == "some words"
    assert len(store.values) == 3  # one text per HTML file, empty ones too
    assert load_pool(tmp_path, EvalCache(store)) == pages


def test_only_regular_files_are_pool_pages_and_a_fifo_never_blocks(tmp_path):
    """A FIFO named ``x.html`` in the pool once blocked ``eval qa`` forever in its open."""
    (tmp_path / "a.html").write_text("<p>some words</p>")
    os.mkfifo(tmp_path / "x.html")
    os.mkfifo(tmp_path / "z.html")
    (tmp_path / "y.html").symlink_to(tmp_path / "x.html")  # a link to it, inside the pool
    found: list[list[PoolPage]] = []
    worker = threading.Thread(target=lambda: found.append(load_pool(tmp_path, EvalCache())))
    worker.daemon = True  # a blocked open would keep it, not the test run
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "the pool blocked on a FIFO"
    assert [page.path.name for page in found[0]] == ["a.html"]


@pytest.mark.parametrize("relative", [False, True])
def test_a_pool_page_that_leads_out_of_the_pool_is_refused(tmp_path, relative):
    """A pool's ``x.html`` linking to a file elsewhere would be read as a distractor and
    sent to the reader: refused, exit 3."""
    pool = tmp_path / "pool"
    (pool / "sub").mkdir(parents=True)
    (pool / "a.html").write_text("<p>some words</p>")
    (tmp_path / "outside.html").write_text("<p>private notes</p>")
    target = Path("../../outside.html") if relative else tmp_path / "outside.html"
    (pool / "sub" / "x.html").symlink_to(target)
    with pytest.raises(InputError, match=r"x\.html is outside .*pool") as raised:
        load_pool(pool, EvalCache())
    assert raised.value.exit_code == 3


class FakeStore:
    readonly = False

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], bytes] = {}

    def get_derived(self, kind: str, key: str) -> bytes | None:
        assert kind == TEXTS
        return self.values.get((kind, key))

    def put_derived(self, kind: str, key: str, value: bytes) -> None:
        self.values[kind, key] = value
