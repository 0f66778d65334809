"""The found server backend (``reader/backends/found_server.py``): under ``auto``, the best
chat model of the servers found on loopback, or the one ``--model`` names when a server
lists it; otherwise it leaves the choice to the backends after it."""

from __future__ import annotations

from htmlrag_chat.reader.choice import Surroundings
from htmlrag_chat.reader.discover import Server
from htmlrag_chat.reader.registry import plan_reader
from htmlrag_chat.reader.settings import ReaderSettings

OLLAMA = Server("Ollama", "http://127.0.0.1:11434/v1", ("nomic-embed-text", "qwen2.5:latest"))
LM_STUDIO = Server("LM Studio", "http://127.0.0.1:1234/v1", ("llama-3.1-8b-instruct",))


def test_the_best_model_found_answers_and_a_named_one_only_where_listed() -> None:
    around = Surroundings(None, (OLLAMA, LM_STUDIO))
    plan = plan_reader(ReaderSettings(), around)
    assert (plan.backend.name, plan.model, plan.server) == (
        "found",
        "llama-3.1-8b-instruct",
        LM_STUDIO,
    )
    where = "LM Studio at 127.0.0.1:1234"
    assert plan.why == f"reader: llama-3.1-8b-instruct on {where} (found on this machine)"
    assert plan.label == f"llama-3.1-8b-instruct on {where}"
    named = plan_reader(ReaderSettings(model="qwen2.5"), around)  # Ollama's :latest left off
    assert (named.backend.name, named.model, named.server) == ("found", "qwen2.5:latest", OLLAMA)
    # Listed by none: the transformers backend says why it cannot read it.
    elsewhere = plan_reader(ReaderSettings(model="mistral:7b"), around)
    assert elsewhere.backend.name == "transformers" and elsewhere.problem is not None
    # --reader local never asks a server.
    local = plan_reader(ReaderSettings(reader="local", model="qwen2.5"), around)
    assert local.backend.name != "found"
