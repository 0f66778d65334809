"""Messages between ``ask`` and the service: dataclasses rebuilt from their type hints,
and a message of the wrong shape refused in one line, never half an object."""

from __future__ import annotations

import json

import pytest

from htmlrag_chat.agent.research import Dropped
from htmlrag_chat.base.events import SourcesReady, StageFinished
from htmlrag_chat.base.sources import Source
from htmlrag_chat.evidence.claims import Claim, Quote
from htmlrag_chat.reader import Turn
from htmlrag_chat.service.wire import WireError, event_message, event_of, from_wire, to_wire

SOURCE = Source(1, "https://example.org/a", "A", "<p>ARKit</p>", "ARKit", date="2019-07-03")


def through_json(value: object) -> object:
    return json.loads(json.dumps(to_wire(value)))


def test_events_turns_and_claims_come_back_equal() -> None:
    for event in (SourcesReady((SOURCE,)), StageFinished("fused/score", 12.5, {"blocks": 3})):
        assert event_of(json.loads(json.dumps(event_message(event)))) == event
    turn = Turn("Which framework?", "ARKit [1].", (SOURCE,))
    assert from_wire(list[Turn], through_json([turn])) == [turn]
    claim = Claim("ARKit [1].", (1,), (Quote(1, "ARKit", 0.9, True),), 0.9, judged=None)
    assert from_wire(Claim, through_json(claim)) == claim
    assert from_wire(list[Dropped], through_json([Dropped("q", "why")])) == [Dropped("q", "why")]


@pytest.mark.parametrize(
    ("hint", "data"),
    [
        (Source, {"number": "1", "url": "u", "title": "t", "html": "", "text": ""}),
        (Source, {"url": "u"}),
        (list[Turn], {"question": "q"}),
        (StageFinished, {"stage": "x", "ms": True}),
    ],
)
def test_a_value_of_the_wrong_shape_is_refused(hint: object, data: object) -> None:
    with pytest.raises(WireError):
        from_wire(hint, data)


def test_an_unknown_event_is_refused() -> None:
    with pytest.raises(WireError, match="unknown event"):
        event_of({"event": "Exec", "data": {}})
