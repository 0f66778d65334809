"""What travels between ``ask`` and the service: dataclasses as JSON, rebuilt from their
type hints on the other side.

Every message is one line of JSON. The events are those of ``base/events.py``, tagged with
their class's name; the answer is ``agent.answer.Answer`` with its sources, claims and
quotes. A value of the wrong shape is a ``WireError`` (one line), never half an object.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import types
import typing
from pathlib import Path
from typing import Any, get_args, get_origin

from htmlrag_chat.base.errors import UserError
from htmlrag_chat.base.events import Event
from htmlrag_chat.base.sources import Source

MAX_LINE = 64 << 20  # one message: a question's conversation with its sources, an answer
EVENTS: dict[str, type] = {kind.__name__: kind for kind in get_args(Event)}
_NAMES = {"Source": Source}  # names the modules import for type checking only


class WireError(UserError):
    """A message that is not what the other side sends."""


def fingerprint(options: object, cache: Path) -> str:
    """The settings a question is answered with, and the cache file it is answered from,
    as one digest: the service answers only a caller whose digest is its own."""
    described = json.dumps([to_wire(options), str(cache.resolve())], sort_keys=True, default=str)
    return hashlib.sha256(described.encode()).hexdigest()


def encode(message: dict[str, object]) -> bytes:
    return json.dumps(message, ensure_ascii=False).encode() + b"\n"


def event_message(event: Event) -> dict[str, object]:
    return {"event": type(event).__name__, "data": to_wire(event)}


def event_of(message: dict[str, Any]) -> Event:
    kind = EVENTS.get(message.get("event", ""))
    if kind is None:
        raise WireError(f"the service sent an unknown event: {str(message.get('event'))[:40]}")
    event: Event = from_wire(kind, message.get("data"))
    return event


def to_wire(value: object) -> object:
    """``value`` as JSON values: dataclasses as objects of their fields, tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_wire(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [to_wire(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_wire(item) for key, item in value.items()}
    if isinstance(value, Path):
        return str(value)
    return value


def from_wire(hint: Any, data: object) -> Any:
    """``data`` rebuilt as ``hint`` says: a dataclass from its fields' hints, lists, tuples,
    dicts, optional values and plain values, each checked."""
    origin, args = get_origin(hint), get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        kinds = [arg for arg in args if arg is not type(None)]
        if len(kinds) == 1:
            return from_wire(kinds[0], data)
    elif isinstance(hint, type) and dataclasses.is_dataclass(hint) and isinstance(data, dict):
        hints = typing.get_type_hints(hint, localns=_NAMES)
        given = {f.name: from_wire(hints[f.name], data[f.name]) for f in _fields(hint, data)}
        return hint(**given)
    elif origin in (list, tuple) and isinstance(data, list):
        item = args[0] if args else Any
        items = [from_wire(item, value) for value in data]
        return items if origin is list else tuple(items)
    elif origin is dict and isinstance(data, dict):
        return {key: from_wire(args[1], value) for key, value in data.items()}
    elif hint is Any or (isinstance(hint, type) and _plain(hint, data)):
        return data
    raise WireError(f"the service sent a value that is not {getattr(hint, '__name__', hint)}")


def _fields(kind: type, data: dict[str, Any]) -> list[dataclasses.Field[Any]]:
    """The fields of ``kind`` that ``data`` gives (those with defaults may be left out)."""
    fields = [f for f in dataclasses.fields(kind) if f.init]
    missing = [
        f.name
        for f in fields
        if f.name not in data
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise WireError(f"the service sent a {kind.__name__} without {', '.join(missing)}")
    return [f for f in fields if f.name in data]


def _plain(kind: type, data: object) -> bool:
    if kind is float:
        return isinstance(data, int | float) and not isinstance(data, bool)
    if kind is int:
        return isinstance(data, int) and not isinstance(data, bool)
    return isinstance(data, kind)
