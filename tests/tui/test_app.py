"""The chat app driven by Pilot: ask, stream, stop, follow up, reopen, export, errors."""

from __future__ import annotations

import webbrowser
from argparse import Namespace
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Markdown, Static

from htmlrag_chat.agent.answer import Answer
from htmlrag_chat.agent.research import Research
from htmlrag_chat.base.events import AnswerDelta
from htmlrag_chat.cli import main
from htmlrag_chat.commands.common import history_store
from htmlrag_chat.conversations.session import ChatSession, title_for
from htmlrag_chat.evidence.correction import MARK
from htmlrag_chat.modelio.loader import load_count
from htmlrag_chat.pruning.factory import PruneSettings
from htmlrag_chat.reader import Source
from htmlrag_chat.reader.extractive import HEADER
from htmlrag_chat.reader.layout import reminder
from htmlrag_chat.store.db import Store
from htmlrag_chat.tui.app import ChatApp
from htmlrag_chat.tui.history import REOPENED
from htmlrag_chat.tui.messages import PipelineEvent, QuestionEnded
from htmlrag_chat.tui.panels import HistoryPanel, SourcesPanel
from htmlrag_chat.tui.screens import ConfirmScreen, HelpScreen, RenameScreen
from htmlrag_chat.tui.transcript import (
    AnswerView,
    ErrorView,
    NoteView,
    QuestionView,
    Welcome,
    stored_views,
)
from tests.conftest import import_demo
from tests.loopback import unused_port
from tests.openai_server import ScriptedLLM, serve_llm
from tests.tui.conftest import (
    CHECK_MARK,
    GOLD,
    QUESTION,
    REWRITE_MARK,
    SIZE,
    answers,
    ask,
    make_app,
    options,
    run,
    scripted,
    wait_until,
)
from tests.tui.screenshot import screen_text


def gold_number(view: AnswerView) -> int:
    return next(s.number for s in view.sources if s.url == QUESTION["gold_url"])


def test_a_question_is_answered_with_citations_and_its_sources_listed(
    cache: Store, history: Store, tmp_path: Path
) -> None:
    async def scenario() -> None:
        app = make_app(cache, history, options(), tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            assert app.sub_title == "REPLAY recording.db · New chat"
            await ask(pilot, QUESTION["question"], typed=True)  # a key at a time, once
            (view,) = answers(app)
            assert view.text.startswith(HEADER)
            number = gold_number(view)
            assert any(
                GOLD in line and line.endswith(f"[{number}]") for line in view.text.splitlines()
            )
            # The cited source first, in full; the others read under a line that says so,
            # each its number (the answer's) and site.
            panel = app.query_one(SourcesPanel)
            assert panel.sources == view.sources
            prompts = [str(panel.get_option_at_index(i).prompt) for i in range(panel.option_count)]
            assert prompts[0].startswith(f"[{number}] ") and "theverge.com" in prompts[0]
            assert QUESTION["gold_url"] in prompts[0]
            others = [source for source in view.sources if source.number != number]
            assert others and prompts[1] == f"read, not cited ({len(others)}):"
            assert prompts[2:] == [f"[{source.number}] {source.site}" for source in others]
            assert panel.border_subtitle == f"1 cited · {len(view.sources)} read"
            assert panel.highlight(others[0].number) and panel.current == others[0]
            assert "answered in" in str(app.query_one("#status").render())
            (conversation,) = history.conversations()
            (message,) = history.messages(conversation["id"])
            assert message["content"] == QUESTION["question"]
            assert message["answers"][0]["text"] == view.text

    run(scenario())


def test_the_answer_streams_into_the_transcript_as_it_is_generated(
    cache: Store, history: Store, tmp_path: Path
) -> None:
    words = " ".join(f"word{i}" for i in range(40))
    llm = ScriptedLLM(scripted(answer=f"{words} {GOLD} [1]."), chunk_delay=0.05)
    seen: list[str] = []
    handled: list[Any] = []

    async def scenario() -> None:
        async with serve_llm(llm) as url:
            app = make_app(cache, history, options(reader="openai", base_url=url), tmp_path)
            async with app.run_test(size=SIZE, message_hook=handled.append) as pilot:
                await ask(pilot, QUESTION["question"], wait=False)
                await wait_until(pilot, lambda: bool(app.running and answers(app)[0].text))
                while app.running:
                    seen.append(answers(app)[0].text)
                    await pilot.pause(0.03)
                final = answers(app)[0]
                assert final.text == f"{words} {GOLD} [1]."
                rendered = final.query_one(Markdown).source
                assert "[\\[1\\]](cite:1)" in rendered

    run(scenario())
    partial = [text for text in seen if text and text != seen[-1]]
    assert len(set(partial)) >= 3, "the answer appeared all at once"
    assert all(seen[-1].startswith(text) for text in partial)
    deltas = [
        m for m in handled if isinstance(m, PipelineEvent) and isinstance(m.event, AnswerDelta)
    ]
    ended = [m for m in handled if isinstance(m, QuestionEnded)]
    assert len(deltas) > 10 and len(ended) == 1
    assert handled.index(ended[0]) > handled.index(deltas[-1])


def test_escape_stops_the_running_question(cache: Store, history: Store, tmp_path: Path) -> None:
    llm = ScriptedLLM(scripted(answer="This answer never ends " * 20), hang_after=3)

    async def scenario() -> None:
        async with serve_llm(llm) as url:
            app = make_app(cache, history, options(reader="openai", base_url=url), tmp_path)
            async with app.run_test(size=SIZE) as pilot:
                await ask(pilot, QUESTION["question"], wait=False)
                await wait_until(pilot, lambda: bool(answers(app)[0].text), what="first words")
                await pilot.press("escape")
                await wait_until(pilot, lambda: not app.running, 5, "the stop")
                await wait_until(pilot, llm.disconnected.is_set, 5, "the server to see it")
                (view,) = answers(app)
                meta = str(view.query_one(".meta").render())
                assert view.text.startswith("This answer") and "stopped after" in meta
                assert "the question stays in the history, with no answer" in meta
                assert app.session.turns == []
                # The question stays in the history, unanswered; the app takes the next one.
                (conversation,) = history.conversations()
                (message,) = history.messages(conversation["id"])
                assert message["answers"] == []
                llm.hang_after = None
                await ask(pilot, QUESTION["question"])  # in the recording: answered
                assert len(answers(app)) == 2 and answers(app)[1].text.startswith("This answer")

    run(scenario())


def reads(llm: ScriptedLLM) -> list[list[dict[str, Any]]]:
    """The answers' requests: neither a rewrite nor a check."""
    return [
        body["messages"]
        for body in llm.requests
        if not any(mark in body["messages"][-1]["content"] for mark in (REWRITE_MARK, CHECK_MARK))
    ]


def test_a_follow_up_uses_the_conversation(cache: Store, history: Store, tmp_path: Path) -> None:
    llm = ScriptedLLM(scripted())

    async def scenario() -> None:
        async with serve_llm(llm) as url:
            app = make_app(cache, history, options(reader="openai", base_url=url), tmp_path)
            async with app.run_test(size=SIZE) as pilot:
                await ask(pilot, QUESTION["question"])
                await ask(pilot, "shorter please")
                first, second = answers(app)
                assert second.sources == first.sources  # NO SEARCH: the earlier sources
                meta = str(second.query_one(".meta").render())
                assert "from the earlier answer's sources" in meta

    run(scenario())
    read = reads(llm)
    assert len(read) == 2
    history_sent = [m["content"] for m in read[1][1:-1]]
    # with its sources
    asked = QUESTION["question"]
    assert history_sent[0].endswith(f"Question: {asked}\n{reminder(asked)}")
    assert GOLD in history_sent[1]
    assert read[1][-1]["content"] == f"Question: shorter please\n{reminder('shorter please')}"


def test_conversations_are_kept_and_can_be_reopened_renamed_and_deleted(
    cache: Store, history_path: Path, tmp_path: Path
) -> None:
    llm = ScriptedLLM(scripted())

    async def first_session() -> None:
        with Store.open(history_path) as history:
            app = make_app(cache, history, options(), tmp_path)
            async with app.run_test(size=SIZE) as pilot:
                await ask(pilot, QUESTION["question"])
                await pilot.press("ctrl+n")
                await ask(pilot, "Who makes ARKit?")
                assert [c["title"] for c in history.conversations()] == [
                    "Who makes ARKit?",
                    title_for(QUESTION["question"]),
                ]

    async def second_session() -> None:
        async with serve_llm(llm) as url:
            with Store.open(history_path) as history:
                app = make_app(cache, history, options(reader="openai", base_url=url), tmp_path)
                async with app.run_test(size=SIZE) as pilot:
                    panel = app.query_one(HistoryPanel)
                    assert panel.option_count == 2
                    await pilot.press("ctrl+o", "end", "enter")  # the oldest
                    await wait_until(pilot, lambda: len(answers(app)) == 1, 5, "reopen")
                    (question,) = app.query(QuestionView)
                    assert str(question.render()) == QUESTION["question"]
                    (view,) = answers(app)
                    assert view.text.startswith(HEADER) and GOLD in view.text
                    assert app.query_one(SourcesPanel).sources == view.sources
                    assert QUESTION["question"][:40] in app.sub_title
                    # A follow-up in the reopened conversation builds on it.
                    await ask(pilot, "shorter please")
                    assert len(answers(app)) == 2
                    # Rename, then delete, from the history panel.
                    await pilot.press("ctrl+o", "r")
                    await wait_until(pilot, lambda: isinstance(app.screen, RenameScreen))
                    await pilot.press("ctrl+u", *"FaceTime", "enter")
                    await wait_until(pilot, lambda: not isinstance(app.screen, RenameScreen))
                    titles = [c["title"] for c in history.conversations()]
                    assert titles[0] == "FaceTime" and app.sub_title.endswith("FaceTime")
                    await pilot.press("d")
                    await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
                    await pilot.press("y")
                    await wait_until(pilot, lambda: len(history.conversations()) == 1)
                    assert answers(app) == [] and app.session.conversation is None

    run(first_session())
    run(second_session())
    asked = QUESTION["question"]
    assert reads(llm)[0][1]["content"].endswith(f"Question: {asked}\n{reminder(asked)}")


def test_a_replay_whose_history_cannot_be_kept_shows_the_cache_conversations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bare command's replay keeps its conversations in the cache file
    (``commands/common.history_store``); when that file cannot be used, the history is a
    scratch copy of the cache's conversations, so the History panel shows what
    ``htmlrag-chat history`` shows, a reopened one can be followed up, and the recording is
    never written."""
    path = import_demo(tmp_path)
    with Store.open(path) as writable:
        session = ChatSession(writable)
        asked = session.question_asked(QUESTION["question"])
        session.answered(asked, extractive_answer(QUESTION["question"]))
    before = path.read_bytes()
    damaged = tmp_path / "mine.db"
    damaged.write_bytes(b"not SQLite" * 1000)
    monkeypatch.setenv("HTMLRAG_CHAT_CACHE", str(damaged))
    args = Namespace(cache=None, replay_db=path)

    async def scenario() -> None:
        with (
            Store.open(path, readonly=True) as cache,
            history_store(args, cache) as (history, not_kept),
        ):
            assert not_kept.startswith(f"{damaged} cannot be used")
            app = ChatApp(options(), cache, ChatSession(history, kept=False), export_dir=tmp_path)
            async with app.run_test(size=SIZE) as pilot:
                assert app.query_one(HistoryPanel).option_count == 1
                await pilot.press("ctrl+o", "end", "enter")
                await wait_until(pilot, lambda: len(answers(app)) == 1, 5, "reopen")
                await ask(pilot, "shorter please")
                assert len(answers(app)) == 2 and len(history.messages(1)) == 2

    run(scenario())
    assert path.read_bytes() == before


def extractive_answer(question: str) -> Answer:
    source = Source(1, "https://a.test/", "A", "<p>Gustave Eiffel's company built it.</p>", "")
    return Answer(question, "Gustave Eiffel's company [1].", "extractive", "extractive",
                  [], 0, [], Research([source], [question], rounds=1))  # fmt: skip


def test_export_copy_and_the_source_actions(
    cache: Store, history: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url, new=0: opened.append(url))

    async def scenario() -> None:
        app = make_app(cache, history, options(), tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot, QUESTION["question"])
            (view,) = answers(app)
            await pilot.press("ctrl+y")
            assert app.clipboard == view.text
            await pilot.press("ctrl+s")
            (exported,) = tmp_path.glob("conversation-*.md")
            text = exported.read_text(encoding="utf-8")
            assert text.startswith(f"# {app.session.title}\n\n## {QUESTION['question']}\n")
            assert view.text in text and f"(<{QUESTION['gold_url']}>)" in text
            # A citation picks its source: by click (the link's message) or by its number.
            number = gold_number(view)
            markdown = view.query_one(Markdown)
            markdown.post_message(Markdown.LinkClicked(markdown, f"cite:{number}"))
            panel = app.query_one(SourcesPanel)
            await wait_until(pilot, lambda: panel.highlighted == 0, 5, "highlight")
            assert panel.current is not None and panel.current.number == number  # cited: first
            view.focus()
            await pilot.press("1")
            assert panel.current == view.sources[0]
            await pilot.press("ctrl+l", "c")
            assert app.clipboard == view.sources[0].url
            await pilot.press("o")
            assert opened == [view.sources[0].url]

    run(scenario())


def test_help_screen_and_command_palette(cache: Store, history: Store, tmp_path: Path) -> None:
    async def scenario() -> None:
        app = make_app(cache, history, options(), tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("f1")
            assert isinstance(app.screen, HelpScreen)
            text = app.screen.query_one(Markdown).source
            for row in (
                "| Ctrl+Q | Quit (this session's conversations are not kept) |",
                "| Esc | Stop the running question (else: back to the question box, the panes as "
                "the width has them) |",
                "| Ctrl+L | Show the selected answer's sources and go to them (again: hide them) |",
                "| Ctrl+O | Show the saved conversations and go to them (again: hide them) |",
                "| Ctrl+N | Start a new conversation |",
                "| Ctrl+S | Save the conversation as Markdown here |",
            ):
                assert row in text
            await pilot.press("escape")
            assert not isinstance(app.screen, HelpScreen)
            await ask(pilot, QUESTION["question"])
            await pilot.press("ctrl+p", *"export conv")
            await pilot.pause(0.5)
            await pilot.press("enter")
            await wait_until(pilot, lambda: any(tmp_path.glob("conversation-*.md")), 5)

    run(scenario())


@pytest.mark.parametrize(
    ("reader", "expected"),
    [
        ({"reader": "openai", "base_url": f"http://127.0.0.1:{unused_port()}/v1"}, "server"),
        ({"reader": "local", "model": "/no/such/model"}, "/no/such/model"),
    ],
    ids=["server-unreachable", "no-model"],
)
def test_errors_are_messages_in_the_chat(
    cache: Store, history: Store, tmp_path: Path, reader: dict[str, str], expected: str
) -> None:
    async def scenario() -> None:
        app = make_app(cache, history, options(**reader), tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot, QUESTION["question"])
            errors = [str(e.render()) for e in app.query(ErrorView)]
            # The failed start-up load may have said it first; the question says it again.
            assert errors[-1].startswith("Could not answer:")
            assert all(expected in e for e in errors)
            assert app.is_running and app.query_one("#prompt").has_focus

    run(scenario())


def test_a_failed_search_says_what_to_do(history: Store, tmp_path: Path) -> None:
    from dataclasses import replace

    from htmlrag_chat.web.settings import SearchSettings
    from tests.loopback import serve_app
    from tests.search_apis import SearchApis

    apis = SearchApis(status={"searxng": 429})

    async def scenario() -> None:
        async with serve_app(apis.app()) as port:
            url = f"http://127.0.0.1:{port}"
            limited = SearchSettings(backends=("searxng",), searxng_url=url)
            with Store.open(tmp_path / "cache.db") as cache:
                agent_options = replace(options(replay=False), search=limited)
                app = make_app(cache, history, agent_options, tmp_path)
                async with app.run_test(size=SIZE) as pilot:
                    await ask(pilot, "what is htmlrag")
                    (error,) = app.query(ErrorView)
                    shown = str(error.render())
                    assert "searxng answered HTTP 429" in shown and "--replay" in shown
                    # Said once: not also as a note that the search was skipped.
                    notes = [str(n.render()) for n in app.query(NoteView)]
                    assert not [n for n in notes if "HTTP 429" in n], notes
                    # Kept in the history, with no answer (docs/chat-app.md), and shown so
                    # when the conversation is reopened.
                    (kept,) = app.session.conversations()
                    (message,) = history.messages(kept["id"])
                    assert message["content"] == "what is htmlrag" and not message["answers"]

    run(scenario())


def test_without_a_terminal_the_bare_command_says_how_to_ask(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "htmlrag-chat ask QUESTION" in err


def test_a_tiny_local_model_answers_in_the_app(
    cache: Store, history: Store, tmp_path: Path, tiny_lm_dir: Path
) -> None:
    """The local reader path: model loading and generation in threads, streamed in."""
    handled: list[Any] = []

    async def scenario() -> None:
        agent_options = options(reader="local", model=str(tiny_lm_dir), max_tokens=16)
        app = make_app(cache, history, agent_options, tmp_path)
        async with app.run_test(size=SIZE, message_hook=handled.append) as pilot:
            await ask(pilot, QUESTION["question"])
            (view,) = answers(app)
            assert not app.query(ErrorView)
            meta = str(view.query_one(".meta").render())
            assert meta.startswith(f"transformers · {tiny_lm_dir}")
            (conversation,) = history.conversations()
            (message,) = history.messages(conversation["id"])
            assert message["answers"][0]["reader"] == f"transformers:{tiny_lm_dir}"

    run(scenario())
    stages = [
        m.event.stage for m in handled if isinstance(m, PipelineEvent) and hasattr(m.event, "stage")
    ]
    assert {"search", "fetch", "clean", "read", "cite"} <= set(stages)
    assert "plan" not in stages  # a reader on this machine's CPU plans no first question


def test_no_color_makes_the_app_monochrome(
    cache: Store, history: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Textual draws without colour under NO_COLOR; nothing of ours turns that off."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert not make_app(cache, history, options(), tmp_path).no_color
    monkeypatch.setenv("NO_COLOR", "1")
    assert make_app(cache, history, options(), tmp_path).no_color


def test_the_sources_show_while_the_reader_is_still_reading(
    cache: Store, history: Store, tmp_path: Path
) -> None:
    """Use the wait: the Sources panel lists the pruned sources before the first answer
    token, and the status line says what the reader is doing."""
    llm = ScriptedLLM(scripted(answer=f"It is {GOLD} [1]."), chunk_delay=0.4)
    early: list[tuple[int, str, str]] = []

    async def scenario() -> None:
        async with serve_llm(llm) as url:
            app = make_app(cache, history, options(reader="openai", base_url=url), tmp_path)
            async with app.run_test(size=SIZE) as pilot:
                await ask(pilot, QUESTION["question"], wait=False)
                panel = app.query_one(SourcesPanel)
                await wait_until(pilot, lambda: bool(panel.sources), 60, "the sources")
                early.append((len(panel.sources), answers(app)[0].text, ""))

                def status() -> str:
                    return str(app.query_one("#status").render())

                await wait_until(pilot, lambda: "generating" in status(), 60, "the reader")
                early[0] = (*early[0][:2], status())
                await wait_until(pilot, lambda: not app.running, 60, "the answer")
                assert panel.sources == answers(app)[0].sources

    run(scenario())
    [(count, text, status)] = early
    assert count > 0 and text == ""  # listed before a word of the answer
    assert status.startswith("answering · generating")


def test_reasoning_closed_by_an_unnamed_model_is_taken_back_from_the_transcript(
    cache: Store, history: Store, tmp_path: Path
) -> None:
    """A model whose template opened the think block, under a name that does not say so:
    its reasoning streams in, then the ``</think>`` it writes takes all of it back."""
    # Seconds of reasoning, so that a loaded machine's app still draws some of it.
    reasoning = " ".join(f"hmm{i}" for i in range(60))
    llm = ScriptedLLM(scripted(answer=f"{reasoning}</think>It uses {GOLD} [1]."), chunk_delay=0.05)
    seen: list[str] = []

    async def scenario() -> None:
        async with serve_llm(llm) as url:
            # The answer as the reader wrote it: no correction of its citation.
            written = options(reader="openai", base_url=url, correct_citations=False)
            app = make_app(cache, history, written, tmp_path)
            async with app.run_test(size=SIZE) as pilot:
                await ask(pilot, QUESTION["question"], wait=False)
                while app.running:
                    seen.extend(view.text for view in answers(app))
                    await pilot.pause(0.02)
                (view,) = answers(app)
                assert view.text == f"It uses {GOLD} [1]."
                assert "hmm" not in view.query_one(Markdown).source
                (conversation,) = history.conversations()
                (message,) = history.messages(conversation["id"])
                assert message["answers"][0]["text"] == view.text

    run(scenario())
    assert any("hmm3" in text for text in seen)  # it was shown while it streamed


def test_the_history_tells_conversations_apart_and_reaches_the_one_left(
    cache: Store, history: Store, tmp_path: Path
) -> None:
    """The same question asked in two chats: each row says when and how many questions,
    the open one is marked; after opening the older, the one left is a row to go back to,
    and the status line no longer shows the time of the chat left."""

    def rows(app: ChatApp) -> list[str]:
        panel = app.query_one(HistoryPanel)
        return [str(panel.get_option_at_index(i).prompt) for i in range(panel.option_count)]

    async def scenario() -> None:
        app = make_app(cache, history, options(), tmp_path)
        async with app.run_test(size=(160, 50)) as pilot:
            await ask(pilot, QUESTION["question"])
            first = app.session.conversation
            await pilot.press("ctrl+n")
            await ask(pilot, QUESTION["question"])
            second = app.session.conversation
            await ask(pilot, "Which iPhones get it?")
            notes = [str(note.render()) for note in app.query(NoteView)]
            assert "skipped query Which iPhones get it?: not in the recording" in notes
            title = title_for(QUESTION["question"])
            assert rows(app) == [
                f"● {title}\njust now · 2 questions · open",
                f"{title}\njust now · 1 question",
            ]
            await pilot.press("ctrl+o", "down", "enter")
            await wait_until(pilot, lambda: app.session.conversation == first, 5, "reopen")
            assert len(answers(app)) == 1 and rows(app)[1].startswith("● ")
            assert str(app.query_one("#status").render()) == REOPENED
            await pilot.press("ctrl+o", "home", "enter")
            await wait_until(pilot, lambda: app.session.conversation == second, 5, "back")
            assert len(answers(app)) == 2 and rows(app)[0].startswith("● ")

    run(scenario())


def test_a_second_question_loads_no_model(
    cache: Store, history: Store, tmp_path: Path, tiny_lm_dir: Path, tiny_tied_lm_dir: Path
) -> None:
    """The app loads the reader and the pruning models once, when it starts: a question
    asked later, in a new conversation too, is answered by the models already loaded."""
    loads: list[int] = []

    async def scenario() -> None:
        agent_options = replace(
            options(reader="local", model=str(tiny_lm_dir), max_tokens=8),
            prune=PruneSettings(pruner="two-stage", gen_model=str(tiny_tied_lm_dir), budget=1024),
        )
        app = make_app(cache, history, agent_options, tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await ask(pilot, QUESTION["question"])
            loads.append(load_count())
            await pilot.press("ctrl+n")
            await ask(pilot, QUESTION["question"])
            loads.append(load_count())
            assert not app.query(ErrorView) and answers(app)[-1].text

    run(scenario())
    first, second = loads
    assert second == first
    assert len(history.conversations()) == 2


def test_at_80_columns_the_recording_is_named_and_header_footer_and_help_stay_readable(
    cache: Store, history: Store, tmp_path: Path
) -> None:
    """A newcomer's 80x24 over the demo recording: the welcome names the question the
    recording holds (it answers only those), the header shows the reader, the replayed
    file and the chat's title uncut, the footer reaches Ctrl+Y, and F1 says how to close
    it where 24 lines still show it. On 3afc709 the welcome named no question, the header
    was cut after "(rea…" and the footer after "^n New"."""

    async def scenario() -> None:
        app = make_app(cache, history, options(), tmp_path)
        async with app.run_test(size=(80, 24)) as pilot:
            # The reader's name lands in the header once it is chosen (a worker), the footer
            # once the screen is laid out: on a loaded machine that can take a moment.
            await wait_until(
                pilot,
                lambda: "(no LLM)" in screen_text(app) and "^p palette" in screen_text(app),
                what="the header's reader and the footer",
            )
            screen = screen_text(app).splitlines()
            assert screen[0].strip() == (
                "htmlrag-chat · extractive (no LLM) — REPLAY recording.db · New chat"
            )
            assert "^y Copy answer" in screen[-1] and "^l Sources" in screen[-1]
            welcome = " ".join(str(app.query_one(Welcome).render()).split())
            assert f"The recording holds the searches for: “{QUESTION['question']}”" in welcome
            assert "replays the recorded searches and pages" in welcome
            assert "searches the web" not in welcome
            await pilot.press("f1")
            await pilot.pause(0.2)
            assert isinstance(app.screen, HelpScreen)
            assert "Esc, F1 or q closes this" in screen_text(app).splitlines()[1]
            await pilot.press("q")
            assert not isinstance(app.screen, HelpScreen)

    run(scenario())


def test_the_words_of_the_sources_show_under_the_answer_in_80_columns(
    cache: Store, history: Store, tmp_path: Path
) -> None:
    """Each sentence's quote under the answer, wrapped to the window; the sentence no source
    backs is marked there with its source's closest passage, and flagged in the line under
    it; a reopened conversation shows them again."""
    reply = (
        "FaceTime Attention Correction uses ARKit to grab a depth map of your face [2]. "
        "The feature arrived in iOS 13 beta 7 [2]."
    )

    async def scenario() -> None:
        async with serve_llm(ScriptedLLM(scripted(answer=reply))) as url:
            app = make_app(cache, history, options(reader="openai", base_url=url), tmp_path)
            async with app.run_test(size=(80, 24)) as pilot:
                await ask(pilot, QUESTION["question"])
                (view,) = answers(app)
                assert view.sources[1].url == QUESTION["gold_url"]
                evidence = view.query_one(".evidence", Static)
                lines = view.evidence.splitlines()
                assert lines[0].startswith("- FaceTime Attention Correction uses ARKit")
                assert lines[1].startswith('  [2] "') and "ARKit" in lines[1]
                assert lines[2] == "- The feature arrived in iOS 13 beta 7. (unsupported)"
                assert lines[3].startswith("  [2] closest passage, not backing it:")
                assert "beta" in lines[3] and len(lines) == 4
                assert evidence.region.right <= 80 and evidence.size.height > len(lines)
                meta = str(view.query_one(".meta", Static).render())
                assert '! unsupported: "The feature arrived in iOS 13 beta 7."' in meta
                assert "7 is not in it" in meta

    run(scenario())
    (conversation,) = history.conversations()
    views = stored_views(history.messages(conversation["id"]))
    (reopened,) = [view for view in views if isinstance(view, AnswerView)]
    assert reopened.evidence.splitlines()[1].startswith('  [2] "')


def test_a_corrected_citation_replaces_the_streamed_one_and_is_said_under_the_answer(
    cache: Store, history: Store, tmp_path: Path
) -> None:
    """The Verge's words citing another page: the answer streams as written, then shows
    the source that backs it, marked; the line under it says which moved; reopened, the
    same."""
    said = "FaceTime Attention Correction uses ARKit to grab a depth map of your face"

    async def scenario() -> None:
        async with serve_llm(ScriptedLLM(scripted(answer=f"{said} [1]."))) as url:
            app = make_app(cache, history, options(reader="openai", base_url=url), tmp_path)
            async with app.run_test(size=(80, 24)) as pilot:
                await ask(pilot, QUESTION["question"])
                (view,) = answers(app)
                gold = gold_number(view)
                assert gold != 1 and view.text == f"{said} [{gold}]{MARK}."
                rendered = view.query_one(Markdown).source
                assert f"(cite:{gold})" in rendered and "(cite:1)" not in rendered
                meta = str(view.query_one(".meta", Static).render())
                assert f'{MARK} corrected: "{said}." cited [1], which does not back it' in meta
                assert "! unsupported" not in meta

    run(scenario())
    (conversation,) = history.conversations()
    views = stored_views(history.messages(conversation["id"]))
    (reopened,) = [view for view in views if isinstance(view, AnswerView)]
    assert reopened.text.endswith(f"]{MARK}.") and f"{MARK} corrected:" in reopened._meta
