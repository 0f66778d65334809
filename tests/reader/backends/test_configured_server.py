"""The configured server backend (``reader/backends/configured_server.py``): ``--reader
openai`` without a URL is one problem, said alike where ``ask`` loads the reader and where
``models`` lists it; a URL where nothing answers is said before any search."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from htmlrag_chat.assembly.inventory import take_inventory
from htmlrag_chat.assembly.wiring import AgentOptions
from htmlrag_chat.base.errors import ModelUnavailable
from htmlrag_chat.reader import ReaderFailed
from htmlrag_chat.reader.settings import ReaderSettings
from tests.loopback import unused_port
from tests.reader.building import build_reader


def test_openai_without_a_url_fails_the_same_way_everywhere(hf_cache: Path) -> None:
    settings = ReaderSettings(reader="openai", probe_ports=())
    with pytest.raises(ModelUnavailable, match="needs the server's URL"):
        build_reader(settings, lambda event: None)
    row = take_inventory(AgentOptions(reader=settings), hf_cache).row("reader")
    assert not row.present and "needs the server's URL" in row.note


def test_a_configured_server_nothing_answers_at_is_said_before_anything_else(
    hf_cache: Path,
) -> None:
    url = f"http://127.0.0.1:{unused_port()}/v1"
    settings = ReaderSettings(reader="openai", base_url=url, model="m", probe_ports=())
    with pytest.raises(ReaderFailed, match=f"cannot reach the reader server at {url}"):
        build_reader(settings, lambda event: None)
    row = take_inventory(AgentOptions(reader=settings), hf_cache).row("reader")
    assert (row.where, row.present) == ("server", False)
    assert row.note.startswith(f"nothing answers at 127.0.0.1:{urlsplit(url).port}")
