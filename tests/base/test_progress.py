"""What the events say to people: a line per event for every face, and the status line."""

from __future__ import annotations

from htmlrag_chat.base.events import (
    GIVEN,
    WRITTEN,
    AnswerDelta,
    Notice,
    PartEnded,
    PartsPlanned,
    PartStarted,
    Progress,
    ReaderBusy,
    Searching,
    Skipped,
    SourcesReady,
    StageFinished,
    StageStarted,
)
from htmlrag_chat.base.progress import PipelineStatus, event_line
from htmlrag_chat.base.sources import Source


def test_the_line_follows_stages_pages_and_tokens_of_each_pruning_stage() -> None:
    status = PipelineStatus()
    assert status.line(0.0) == "starting · 0.0 s"
    status.apply(Searching(1, ("q",), "as typed"))
    status.apply(StageStarted("fetch", 10))
    status.apply(Progress("fetch", 7, 10, 1))
    assert status.line(1.25) == "fetching pages · round 1 · pages 7/10, 1 failed · 1.2 s"
    status.apply(StageStarted("embed/score", 300))
    assert status.stage_label() == "pruning (embed score)"
    status.apply(StageFinished("embed/prune", 5.0, {"tokens_before": 30512, "tokens_after": 8190}))
    status.apply(StageFinished("gen/prune", 5.0, {"tokens_before": 8190, "tokens_after": 4001}))
    status.apply(StageStarted("read", 4))
    status.apply(AnswerDelta("ARKit [1]"))
    assert status.line(4.0) == (
        "answering · round 1 · pages 7/10, 1 failed · embed 30,512→8,190 tok"
        " · gen 8,190→4,001 tok · 9 chars · 4.0 s"
    )


def test_a_new_round_counts_its_own_pages() -> None:
    status = PipelineStatus()
    status.apply(StageStarted("fetch", 10))
    status.apply(Progress("fetch", 10, 10, 0))
    status.apply(Searching(2, ("more",), "missing: x"))
    status.apply(StageStarted("fetch", 3))
    assert "round 2 · pages 0/3 ·" in status.line(0)


def test_every_event_is_worded_once_for_every_face() -> None:
    assert event_line(Notice("approximate token counts")) == "note: approximate token counts"
    assert event_line(Searching(2, ("a", "b"), "missing: b")) == "round 2 (missing: b): a | b"
    assert event_line(StageStarted("fetch", 5)) == "fetch (5) ..."
    assert event_line(Progress("fetch", 3, 5, 1)) == "fetch 3/5, 1 failed"
    assert event_line(ReaderBusy("prefill", 3512)) == "reader: prefilling 3,512 tokens"
    assert event_line(StageFinished("bm25/prune", 9.6, {"blocks": 7})) == (
        "bm25/prune done in 10 ms: blocks 7"
    )
    assert event_line(AnswerDelta("the answer is no progress")) is None
    source = Source(1, "https://www.example.org/a", "A page", "<p>x</p>", "x", "2024-05-01")
    assert event_line(SourcesReady((source,))) == (
        "sources (1), while the reader reads:\n  [1] A page - example.org (2024-05-01)"
    )


def test_web_text_in_an_event_cannot_reach_a_terminal_or_a_model_as_control() -> None:
    line = event_line(Skipped("https://x.example/\x1b]8;;evil\x07", "said <|eot_id|>"))
    assert line is not None and "\x1b" not in line and "\x07" not in line
    assert "<|eot_id|>" not in line and line.startswith("skipped page https://x.example/")


def test_documents_read_the_first_time_show_their_count_until_read() -> None:
    status = PipelineStatus()
    status.apply(Searching(1, ("q",), "as typed"))
    status.apply(StageStarted("documents"))
    assert status.line(0.5) == "reading your documents · round 1 · 0.5 s"
    status.apply(Progress("documents", 120, 1000, 2))
    assert (
        status.line(3.0) == "reading your documents · round 1 · files 120/1,000, 2 failed · 3.0 s"
    )
    status.apply(StageFinished("documents", 9.0, {"files": 1000, "read": 1000}))
    status.apply(StageStarted("fetch", 10))
    assert "files" not in status.line(9.0)


def test_a_research_s_parts_are_said_in_one_line_each_and_safe() -> None:
    """The parts come from a model: a line each, no control sequence or token reaches the
    terminal; a part's end says its state, from the cache, and what it found."""
    planned = event_line(PartsPlanned(("Who built it?\x1b[2J", "When <|eot_id|>\nopened?")))
    assert planned is not None and "\x1b" not in planned and "<|eot_id|>" not in planned
    lines = planned.splitlines()
    assert lines[0] == "research in 2 parts, as the reader split the question:"
    assert len(lines) == 3 and lines[2].startswith("  2. When ")
    assert event_line(PartStarted(2, 3, "When?")) == "part 2/3: When?"
    ended = PartEnded(1, 3, "answered", cached=True, detail="1 sentence, 1 backed, 2 sources")
    assert event_line(ended) == (
        "part 1/3 answered (from the cache): 1 sentence, 1 backed, 2 sources"
    )
    assert event_line(PartsPlanned(("Q",), GIVEN)) == "research in 1 part, as given:\n  1. Q"
    assert event_line(PartsPlanned(("Q?", "R?"), WRITTEN)).startswith(
        "research in 2 parts, as the question lists them:"
    )
