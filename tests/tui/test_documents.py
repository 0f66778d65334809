"""The chat app with the user's documents (``--docs``), driven by Pilot: answered from the
files alone with ``--no-web``, the Sources panel saying which sources are local files (and
opening none of them), and local beside web sources when the web is on."""

from __future__ import annotations

import shutil
import webbrowser
from dataclasses import replace
from pathlib import Path

import pytest

from htmlrag_chat.store.db import Store
from htmlrag_chat.tui.panels import SourcesPanel
from htmlrag_chat.tui.transcript import Welcome
from tests.tui.conftest import QUESTION, SIZE, answers, ask, make_app, options, run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES, tmp_path / "docs")
    return tmp_path / "docs"


def test_no_web_answers_from_the_files_and_the_panel_marks_them_local(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url, new=0: opened.append(url))
    settings = replace(options(replay=False), sources={"docs": (str(folder),)}, web=False)

    async def scenario(cache: Store) -> None:
        app = make_app(cache, cache, settings, tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            welcome = " ".join(str(app.query_one(Welcome).render()).split())
            assert f"documents: {folder} only" in welcome
            assert "reads your documents (not the web)" in welcome
            assert "searches the web" not in welcome  # on 3afc709 it said so
            await ask(pilot, "Who planted the quince tree by the north wall?")
            (view,) = answers(app)
            assert "Margit Halvorsen" in view.text
            (pdf,) = [s for s in view.sources if s.url.endswith("orchard.pdf")]
            assert view.text.rstrip().endswith(f"[{pdf.number}]")
            panel = app.query_one(SourcesPanel)
            assert panel.sources == view.sources
            index = panel.get_option_index(f"source-{pdf.number}")  # cited ones come first
            prompt = str(panel.get_option_at_index(index).prompt)
            assert prompt.startswith(f"[{pdf.number}] Orchard notes\norchard.pdf · ")
            assert pdf.url in prompt
            prompts = [str(panel.get_option_at_index(i).prompt) for i in range(panel.option_count)]
            assert not any("local file" in prompt for prompt in prompts)  # each by its name
            assert any(prompt.endswith("lighthouse.html") for prompt in prompts)
            panel.focus()
            panel.highlighted = index
            await pilot.press("o", "c")
            assert opened == [] and app.clipboard == pdf.url  # copied, never opened

    with Store.open(tmp_path / "cache.sqlite3") as cache:
        run(scenario(cache))


def test_with_the_web_on_local_and_web_sources_share_the_panel(
    cache: Store, history: Store, folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTMLRAG_CHAT_DERIVED", str(tmp_path / "derived.sqlite3"))
    (folder / "facetime.md").write_text(
        "# FaceTime notes\n\nAttention Correction in iOS 13 FaceTime uses ARKit to grab a"
        " depth map of the face, Dana Whitlock told me.\n"
    )
    settings = replace(options(), sources={"docs": (str(folder),)})

    async def scenario() -> None:
        app = make_app(cache, history, settings, tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot, QUESTION["question"])
            (view,) = answers(app)
            panel = app.query_one(SourcesPanel)
            prompts = [str(panel.get_option_at_index(i).prompt) for i in range(panel.option_count)]
            assert any("FaceTime notes\nfacetime.md" in prompt for prompt in prompts)
            assert any("theverge.com" in prompt for prompt in prompts)
            assert {s.local for s in view.sources} == {True, False}

    run(scenario())
