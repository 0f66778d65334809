"""The layers of docs/architecture.md, checked against the package's real imports.

Each contract is one rule of the architecture page: the modules it governs, and the modules
they may not import (or, for the bottom layers, the only ones they may). The imports are
read from every source file of the package (``htmlrag_chat.base.imports``), those inside
functions included, so a lazy import cannot hide a cycle. A contract that governs no
module, or forbids one that does not exist, fails too: a rename cannot empty a rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from htmlrag_chat.base.imports import (
    ROOT,
    circles,
    closure,
    import_graph,
    imported_names,
    module_files,
)

GRAPH = import_graph()
ARCHITECTURE = ROOT.parent / "docs" / "architecture.md"

# Layers named by their module prefixes (a prefix covers a package and its modules).
BASE = (
    "htmlrag_chat",  # the package itself: its version
    "htmlrag_chat.base",
    "htmlrag_chat.settings",
)
MODELIO = ("htmlrag_chat.modelio",)
HTML = ("htmlrag_chat.html",)
LEXICAL = ("htmlrag_chat.lexical",)
PRUNING = ("htmlrag_chat.pruning", "htmlrag_chat.scoring")
READER = ("htmlrag_chat.reader",)
EVIDENCE = ("htmlrag_chat.evidence",)
WEB = ("htmlrag_chat.web",)
NETWORK = ("htmlrag_chat.web.fetch", "htmlrag_chat.web.search", "htmlrag_chat.web.guard")
STORE = ("htmlrag_chat.store",)
DOCUMENTS = ("htmlrag_chat.documents",)
SOURCES = ("htmlrag_chat.sources",)
RECORDER = ("htmlrag_chat.sources.recorder",)
LOCAL = ("htmlrag_chat.sources.library", "htmlrag_chat.sources.saved")
SOURCE_LIST = ("htmlrag_chat.sources.registry",)
# Each reader backend's module (the servers' shared base, server_backend, is none).
BACKENDS = (
    "htmlrag_chat.reader.backends.configured_server",
    "htmlrag_chat.reader.backends.found_server",
    "htmlrag_chat.reader.backends.gguf_file",
    "htmlrag_chat.reader.backends.transformers_model",
    "htmlrag_chat.reader.backends.no_llm",
)
AGENT = ("htmlrag_chat.agent",)
CONVERSATIONS = ("htmlrag_chat.conversations",)
RESEARCH = ("htmlrag_chat.research",)
SETTINGS = ("htmlrag_chat.reader.settings",)
EVAL = ("htmlrag_chat.eval",)
EVAL_ANSWERS = ("htmlrag_chat.eval_answers",)
ASSEMBLY = ("htmlrag_chat.assembly",)
COMMANDS = ("htmlrag_chat.commands", "htmlrag_chat.cli", "htmlrag_chat.__main__")
TUI = ("htmlrag_chat.tui",)
MCP = ("htmlrag_chat.mcp",)
SERVICE = ("htmlrag_chat.service",)
FACES = COMMANDS + TUI + MCP + SERVICE
# What drives the stages, from the agent up: no stage below it imports any of it.
UPPER = (*AGENT, *CONVERSATIONS, *RESEARCH, *EVAL, *EVAL_ANSWERS, *ASSEMBLY, *FACES)
LAYERS = (
    BASE + MODELIO + PRUNING + READER + EVIDENCE + WEB + STORE + SOURCES + AGENT + CONVERSATIONS
    + RESEARCH + SETTINGS + EVAL + EVAL_ANSWERS + ASSEMBLY + FACES + HTML + LEXICAL + DOCUMENTS
)  # fmt: skip


@dataclass(frozen=True)
class Contract:
    """``modules`` never import ``forbidden``, or, when ``only`` is given, nothing but
    ``only``; ``exceptions`` are (importer, imported) pairs let through, each with why."""

    rule: str
    modules: tuple[str, ...]
    forbidden: tuple[str, ...] = ()
    only: tuple[str, ...] | None = None
    exceptions: dict[tuple[str, str], str] = field(default_factory=dict)

    def breaks(self, graph: dict[str, set[str]]) -> set[tuple[str, str]]:
        found = set()
        for module in _covered(self.modules, graph):
            for name in graph[module]:
                if self.only is not None:
                    broken = not _within(name, self.only)
                else:
                    broken = _within(name, self.forbidden)
                if broken:
                    found.add((module, name))
        return found


CONTRACTS = (
    Contract(
        "base/counting.py imports nothing of the package",
        ("htmlrag_chat.base.counting",),
        only=(),
    ),
    Contract(
        "the base modules (errors, events, safety, paths, the settings tree...) import only "
        "each other",
        BASE,
        only=BASE,
    ),
    Contract(
        "modelio/ (the hub, the loader, the devices, the extras, the installer, model rows, "
        "wheel models) stands on the base alone",
        MODELIO,
        only=(*BASE, *MODELIO),
    ),
    Contract(
        "html/ imports no scorer, reader, agent, web or app code: only itself, the "
        "token-counting protocol, the errors, how a path is shown and the chat templates' "
        "token names",
        HTML,
        only=(
            *HTML,
            "htmlrag_chat.base.counting",
            "htmlrag_chat.base.errors",
            "htmlrag_chat.base.paths",
            "htmlrag_chat.base.specials",
        ),
    ),
    Contract(
        "lexical/ (BM25's maths, its plain terms and the terms per language) sits beside the "
        "HTML core, below the scorers, the evidence check and the extractive reader",
        LEXICAL,
        only=(*LEXICAL, *HTML, *BASE),
    ),
    Contract(
        "pruning/ and the scorers beside it (scoring/) know blocks, not readers, the web, "
        "the store, the agent, the settings or the faces",
        PRUNING,
        forbidden=(
            *READER,
            *EVIDENCE,
            *WEB,
            *STORE,
            *SOURCES,
            *DOCUMENTS,
            *SETTINGS,
            *UPPER,
        ),
    ),
    Contract(
        "reader/ knows numbered sources: not the scorers, the web, the store or the agent",
        READER,
        forbidden=(*PRUNING, *EVIDENCE, *WEB, *STORE, *SOURCES, *UPPER),
    ),
    Contract(
        "evidence/ finds the passages that back an answer's sentences: it reads sources with "
        "the HTML core, the terms and the reader's citation grammar, and knows no embedding "
        "model, web, store, settings or agent",
        EVIDENCE,
        forbidden=(*WEB, *STORE, *SOURCES, *SETTINGS, *UPPER, "htmlrag_chat.scoring.embed"),
    ),
    Contract(
        "web/ searches and downloads: it knows no store, scorer, reader or agent "
        "(sources/recorder.py decides between the cache and the network)",
        WEB,
        forbidden=(
            *PRUNING,
            *READER,
            *EVIDENCE,
            *STORE,
            *SOURCES,
            *DOCUMENTS,
            *SETTINGS,
            *UPPER,
        ),
    ),
    Contract(
        "store/ keeps what the web produced, never reaching the network itself",
        STORE,
        forbidden=(
            *NETWORK,
            *PRUNING,
            *READER,
            *EVIDENCE,
            *SOURCES,
            *DOCUMENTS,
            *SETTINGS,
            *UPPER,
        ),
    ),
    Contract(
        "documents/ turns the user's files into cleaned pages with the HTML core and the "
        "pipeline's cleaning: it knows no web, store, reader or agent",
        DOCUMENTS,
        forbidden=(*WEB, *STORE, *SOURCES, *READER, *SETTINGS, *UPPER),
    ),
    Contract(
        "sources/ is where the agent's pages come from (one protocol, sources/source.py): "
        "the web, the user's documents and saved pages, on the web, the store, documents/ "
        "and the pipeline's page input, below the agent",
        SOURCES,
        forbidden=(*READER, *EVIDENCE, *SETTINGS, *UPPER),
    ),
    Contract(
        "sources/recorder.py sits on the web and the store: it decides between the cache "
        "and the network, and knows no other source",
        RECORDER,
        forbidden=(*PRUNING, *READER, *DOCUMENTS, *LOCAL, *SETTINGS, *UPPER),
    ),
    Contract(
        "the local sources (sources/library.py, the documents; sources/saved.py, saved web "
        "pages) never reach the network",
        LOCAL,
        forbidden=(*WEB, *RECORDER, "htmlrag_chat.sources.online", *READER, *SETTINGS, *UPPER),
    ),
    Contract(
        "a source the user names (sources/library.py, sources/saved.py) knows no other such "
        "source and not their list (sources/registry.py), which reads each one's entry",
        LOCAL,
        forbidden=(*LOCAL, *SOURCE_LIST),
    ),
    Contract(
        "a reader backend is a module of its own (reader/backends/): none imports another's; "
        "reader/registry.py lists them",
        BACKENDS,
        forbidden=BACKENDS,
    ),
    Contract(
        "reader/settings.py sits below the parts it configures: no other reader module, "
        "no agent or face",
        SETTINGS,
        forbidden=(*READER, *SOURCES, *STORE, *UPPER),
    ),
    Contract(
        "agent/ drives the stages; it never reaches the faces or their assembly",
        AGENT,
        forbidden=CONVERSATIONS + RESEARCH + EVAL + EVAL_ANSWERS + ASSEMBLY + FACES,
    ),
    Contract(
        "conversations/ is shared by the app, ask -c and the MCP server: below the faces",
        CONVERSATIONS,
        forbidden=RESEARCH + EVAL + EVAL_ANSWERS + ASSEMBLY + FACES,
    ),
    Contract(
        "research/ asks the agent a question in parts and makes one report of them, kept in "
        "the store and shown by every face: it reaches neither the faces nor their assembly",
        RESEARCH,
        forbidden=EVAL + EVAL_ANSWERS + ASSEMBLY + FACES,
    ),
    Contract(
        "eval/ uses the pipeline, the HTML core, the scorers and the store, and nothing "
        "from the reader, the agent, the web or the interface",
        EVAL,
        forbidden=READER
        + WEB
        + SOURCES
        + AGENT
        + CONVERSATIONS
        + RESEARCH
        + SETTINGS
        + EVAL_ANSWERS
        + ASSEMBLY
        + FACES,
    ),
    Contract(
        "eval_answers/ puts eval/'s contexts before a real reader: it uses eval/, the reader "
        "and the agent's reading, and nothing from the web, the conversations, the assembly "
        "or the interface",
        EVAL_ANSWERS,
        forbidden=WEB + SOURCES + CONVERSATIONS + RESEARCH + ASSEMBLY + FACES,
    ),
    Contract(
        "assembly/ builds the same parts for the faces, and imports none of them",
        ASSEMBLY,
        forbidden=EVAL + EVAL_ANSWERS + FACES,
    ),
    Contract(
        "tui/ is one face: it never imports the others (commands/, mcp/)",
        TUI,
        forbidden=COMMANDS + MCP,
    ),
    Contract(
        "mcp/ is one face: it never imports the others (commands/, tui/); the command line "
        "starts it",
        MCP,
        forbidden=COMMANDS + TUI,
    ),
    Contract(
        "service/ is one face: it never imports the others (commands/, tui/, mcp/); the "
        "command line starts it (serve) and ask hands it questions",
        SERVICE,
        forbidden=COMMANDS + TUI + MCP,
    ),
    Contract(
        "nothing outside tui/ imports tui/: what the chat app and the other faces share "
        "(the words for progress, the status line) lives below them; the bare command "
        "only opens the app",
        tuple(sorted(set(LAYERS) - set(TUI))),
        forbidden=TUI,
        exceptions={
            ("htmlrag_chat.commands.chat", "htmlrag_chat.tui.app"): "the bare command opens it"
        },
    ),
)


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    """Whether module ``name`` is one of ``prefixes`` or inside one of them (the bare
    package name ``htmlrag_chat`` covers only the package's own ``__init__``)."""
    return any(
        name == prefix or (prefix != "htmlrag_chat" and name.startswith(prefix + "."))
        for prefix in prefixes
    )


def _covered(prefixes: tuple[str, ...], graph: dict[str, set[str]]) -> list[str]:
    return sorted(module for module in graph if _within(module, prefixes))


@pytest.mark.parametrize("contract", CONTRACTS, ids=lambda c: c.rule[:60])
def test_no_module_breaks_a_layer_contract(contract: Contract) -> None:
    breaks = contract.breaks(GRAPH)
    unexplained = sorted(pair for pair in breaks if pair not in contract.exceptions)
    found = ", ".join(f"{importer} -> {imported}" for importer, imported in unexplained)
    assert unexplained == [], f"{contract.rule}: {found}"


@pytest.mark.parametrize("contract", CONTRACTS, ids=lambda c: c.rule[:60])
def test_every_contract_names_real_modules_and_live_exceptions(contract: Contract) -> None:
    assert _covered(contract.modules, GRAPH), f"{contract.rule}: governs no module"
    for prefix in (*contract.forbidden, *(contract.only or ())):
        assert _covered((prefix,), GRAPH), f"{contract.rule}: {prefix} is no module"
    # An exception the imports no longer need must go, so none outlives its reason.
    stale = set(contract.exceptions) - contract.breaks(GRAPH)
    assert stale == set(), f"{contract.rule}: exceptions no longer needed: {stale}"


def test_no_import_circle_runs() -> None:
    """No modules reach one another through the imports that run (those inside functions
    included); an import for type checkers alone (``if TYPE_CHECKING:``: the chat app and
    its palette providers name each other's types) makes no circle at run time."""
    assert circles(import_graph(runtime=True)) == []


def test_a_circle_is_found_and_a_type_only_import_is_not_one(tmp_path: Path) -> None:
    package = tmp_path / "htmlrag_chat"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "a.py").write_text("def f():\n    import htmlrag_chat.b\n", encoding="utf-8")
    (package / "b.py").write_text("from htmlrag_chat import a\n", encoding="utf-8")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from htmlrag_chat import a\n"
        "from htmlrag_chat import d\n",
        encoding="utf-8",
    )
    (package / "d.py").write_text("from htmlrag_chat import c\n", encoding="utf-8")
    assert circles(import_graph(package, runtime=True)) == [
        ["htmlrag_chat.a", "htmlrag_chat.b"],
        ["htmlrag_chat.c", "htmlrag_chat.d"],
    ]
    (package / "d.py").write_text(
        "import typing\nif typing.TYPE_CHECKING:\n    from htmlrag_chat import c\n",
        encoding="utf-8",
    )
    assert circles(import_graph(package, runtime=True)) == [["htmlrag_chat.a", "htmlrag_chat.b"]]
    assert len(circles(import_graph(package))) == 2  # every import counts for the layers


def test_every_module_is_in_a_layer() -> None:
    """A new module has to be placed in a layer, so some contract governs it."""
    assert [module for module in GRAPH if not _within(module, LAYERS)] == []


def test_the_architecture_page_states_every_contract() -> None:
    page = " ".join(ARCHITECTURE.read_text(encoding="utf-8").split())
    missing = [c.rule for c in CONTRACTS if " ".join(c.rule.split()) not in page]
    assert missing == []


def test_the_architecture_page_names_every_module() -> None:
    """Its table of who owns what: each module by its path, or by its name in the row of
    its package (``tui/``: ``app.py``, ...)."""
    page = ARCHITECTURE.read_text(encoding="utf-8")
    missing = []
    for path in module_files().values():
        relative = path.relative_to(ROOT)
        if relative.name == "__init__.py" or f"`{relative.as_posix()}`" in page:
            continue
        if not (f"`{relative.parent.as_posix()}/`" in page and f"`{relative.name}`" in page):
            missing.append(relative.as_posix())
    assert missing == []


def test_a_contract_fails_on_a_forbidden_import() -> None:
    """The checker itself: a scorer importing the reader is found, with its exception
    honoured only for the pair it names."""
    graph = {
        "htmlrag_chat.scoring.fused": {"htmlrag_chat.reader.llm", "htmlrag_chat.html.blocks"},
        "htmlrag_chat.reader.llm": set(),
        "htmlrag_chat.html.blocks": set(),
    }
    contract = next(c for c in CONTRACTS if c.modules == PRUNING)
    assert contract.breaks(graph) == {("htmlrag_chat.scoring.fused", "htmlrag_chat.reader.llm")}
    html = next(c for c in CONTRACTS if c.modules == HTML)
    graph["htmlrag_chat.html.text"] = {"htmlrag_chat.pruning.tokens"}
    assert html.breaks(graph) == {("htmlrag_chat.html.text", "htmlrag_chat.pruning.tokens")}


def test_the_graph_reads_real_imports_at_every_depth(tmp_path: Path) -> None:
    package = tmp_path / "htmlrag_chat"
    (package / "html").mkdir(parents=True)
    (package / "__init__.py").write_text("__version__ = '0'\n", encoding="utf-8")
    (package / "tokens.py").write_text("", encoding="utf-8")
    (package / "html" / "__init__.py").write_text("", encoding="utf-8")
    (package / "html" / "text.py").write_text("def visible() -> None: ...\n", encoding="utf-8")
    (package / "html" / "dom.py").write_text(
        "from htmlrag_chat import __version__\n"
        "from htmlrag_chat.html.text import visible\n"
        "def f():\n"
        "    from htmlrag_chat import tokens\n"
        "    import htmlrag_chat.html\n",
        encoding="utf-8",
    )
    # A module of a subpackage imported by name ("from htmlrag_chat.html import text") is
    # that module, not just its package: its edits must reach the caches keyed by it.
    (package / "user.py").write_text("from htmlrag_chat.html import text\n", encoding="utf-8")
    graph = import_graph(package)
    assert graph["htmlrag_chat.html.dom"] == {
        "htmlrag_chat",
        "htmlrag_chat.tokens",
        "htmlrag_chat.html",
        "htmlrag_chat.html.text",
    }
    assert graph["htmlrag_chat.user"] == {"htmlrag_chat.html.text"}
    assert closure(["htmlrag_chat.tokens"], graph) == {"htmlrag_chat", "htmlrag_chat.tokens"}
    assert closure(["htmlrag_chat.html.dom"], graph) == set(graph) - {"htmlrag_chat.user"}


def test_relative_imports_are_refused(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("from . import tokens\n", encoding="utf-8")
    with pytest.raises(ValueError, match="relative import"):
        imported_names(source)


def test_the_real_package_is_read() -> None:
    files = module_files()
    assert files["htmlrag_chat.html.dom"] == ROOT / "html" / "dom.py"
    assert "htmlrag_chat.html.dom" in GRAPH["htmlrag_chat.html.text"]
    assert "htmlrag_chat.scoring.generative" in GRAPH["htmlrag_chat.pruning.factory"]  # lazy
