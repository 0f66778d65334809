"""Every setting, declared once: its section, kind, default, help and the commands that take
it as an option.

From this list come the options of each command (``commands/options.py``), the checks of
the config file and of the environment (``settings/sources.py``), ``config``'s table with
each value's origin, and ``config set`` / ``config init`` (``settings/edit.py``). A setting
``name`` in section ``[sec]`` is ``name = ...`` under ``[sec]`` in the file,
``HTMLRAG_CHAT_NAME`` in the environment and ``--name`` on the command line of the
commands listed in ``commands``. Names are unique across sections, so an option or a
variable names one setting.

This module imports nothing of the package but the value kinds, so every layer may read a
default from it (``default("research.rounds")``) instead of writing the number again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from htmlrag_chat.settings.kinds import (
    Choice,
    Device,
    Domains,
    Integer,
    Kind,
    Names,
    Ports,
    Seconds,
    Secret,
    Text,
    Url,
)

ENV_PREFIX = "HTMLRAG_CHAT_"
SECTIONS = ("reader", "research", "prune", "search", "web")
READERS = ("local", "openai", "extractive", "auto")
# ``two-stage`` is HtmlRAG's (the fused first stage, then the generative pruner; the first
# stage alone when the pruner is not installed); the others are one stage with one scorer.
PRUNERS = ("two-stage", "fused", "embed", "bm25", "gen")
# How the reader receives the pruned pages (``html/rendering.py``, which this must match).
RENDERINGS = ("html", "markdown", "text")
# The commands that answer questions take the same options; ``config`` shows what they
# would make of the file and the environment.
ANSWERING = ("chat", "ask", "config", "mcp")
# Search backends: the APIs (``web/apis.py``) and the engines ``ddgs`` scrapes.
DDGS_ENGINES = ("duckduckgo", "brave", "mojeek", "bing", "google", "yahoo", "yandex", "wikipedia")
API_BACKENDS = ("searxng", "brave-api", "tavily")
BACKENDS = (*API_BACKENDS, *DDGS_ENGINES)
TIMES = ("day", "week", "month", "year")
NO_REGION = "wt-wt"  # ddgs's "no region"; the API backends then send none
SEARCHING = (*ANSWERING, "search")


@dataclass(frozen=True)
class Setting:
    section: str
    name: str
    kind: Kind
    default: Any
    help: str
    commands: tuple[str, ...] = ()  # the commands that take it as ``--name`` (none: file, env)
    short: str | None = None  # a one-letter option too, e.g. ``-m``
    aliases: tuple[str, ...] = ()  # older spellings of the option, still accepted
    env_aliases: tuple[str, ...] = ()  # variables read when ``HTMLRAG_CHAT_NAME`` is not set
    secret: bool = False  # never printed, never an option (shell history, process listings)

    @property
    def key(self) -> str:
        return f"{self.section}.{self.name}"

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> tuple[str, ...]:
        return (ENV_PREFIX + self.name.upper(), *self.env_aliases)


SETTINGS: tuple[Setting, ...] = (
    # -- reader: who writes the answer
    Setting(
        "reader", "reader", Choice(READERS), "auto",
        "auto: the configured server, else Ollama, LM Studio, llama.cpp or vLLM found on "
        "127.0.0.1, else a local model on disk, else extractive; local (transformers), "
        "openai (the server at --base-url), extractive (no LLM)",
        (*ANSWERING, "models", "eval"),
    ),
    Setting(
        "reader", "model", Text(metavar="MODEL"), None,
        "reader model: hub id, local folder, or the server's model name (default: the "
        "server's best chat model, else meta-llama/Llama-3.1-8B-Instruct)",
        (*ANSWERING, "models", "eval"), short="-m",
    ),
    Setting(
        "reader", "base_url", Url(), None,
        "an OpenAI-compatible server, e.g. http://localhost:11434/v1",
        (*ANSWERING, "models", "eval"),
    ),
    Setting(
        "reader", "api_key", Secret(), None,
        "the server's API key (file or environment only, never an option)",
        env_aliases=("OPENAI_API_KEY",), secret=True,
    ),
    Setting(
        "reader", "max_tokens", Integer(), 512, "the longest answer, in tokens",
        (*ANSWERING, "eval"),
    ),
    Setting(
        "reader", "context_tokens", Integer(), None,
        "the server's context window in tokens, when it does not say (the budget is lowered "
        "to fit)", (*ANSWERING, "eval"),
    ),
    Setting(
        "reader", "device", Device(), "auto",
        "where models run: auto (cuda, then mps, then cpu), cpu, cuda, cuda:N, mps",
        (*ANSWERING, "models", "prune", "eval"),
    ),
    Setting(
        "reader", "probe_ports", Ports(), None,
        "127.0.0.1 ports --reader auto asks for a server (default: those of Ollama, LM "
        "Studio, llama.cpp and vLLM; empty: none)",
    ),
    # -- research: how far a question looks
    Setting("research", "rounds", Integer(), 2, "search rounds at most", ANSWERING),
    Setting("research", "pages", Integer(), 10, "pages read per round", ANSWERING),
    Setting(
        "research", "max_queries", Integer(), 3,
        "searches per round at most, the sub-queries of a comparison included", ANSWERING,
    ),
    # -- prune: what the reader gets
    Setting(
        "prune", "pruner", Choice(PRUNERS), "two-stage",
        "two-stage (the fused stage, then the generative pruner when installed), or one "
        "stage of: fused (BM25 + embeddings), embed, bm25, gen", (*ANSWERING, "models", "prune"),
        aliases=("--scorer",),
    ),
    Setting(
        "prune", "budget", Integer(), None,
        "tokens of pruned pages the reader gets, as --render writes them (default: 2048 for a "
        "reader that prefills on this machine's CPU, else 4096)", (*ANSWERING, "prune"),
    ),
    Setting(
        "prune", "render", Choice(RENDERINGS), "markdown",
        "how the reader gets the pruned pages: html (tags kept), markdown (headings, lists "
        "and table rows kept, fewer tokens) or text; the budget counts what it gets",
        (*ANSWERING, "prune"),
    ),
    Setting(
        "prune", "coarse_budget", Integer(), None,
        "two-stage: tokens the first stage keeps (default twice --budget)", ("prune",),
    ),
    Setting(
        "prune", "max_words", Integer(), None,
        "words per block of the last stage (default: an eighth of its budget, 32-256)",
        ("prune",),
    ),
    Setting(
        "prune", "coarse_max_words", Integer(), None,
        "two-stage: words per block of the first stage (default: from its budget)", ("prune",),
    ),
    Setting(
        "prune", "embed_model", Text(metavar="ID_OR_PATH"),
        "sentence-transformers/all-MiniLM-L6-v2",
        "the first stage's sentence-transformers model, hub id or folder (the default is "
        "bundled)", (*ANSWERING, "models", "prune", "eval"),
    ),
    Setting(
        "prune", "gen_model", Text(metavar="ID_OR_PATH"), "zstanjj/HTML-Pruner-Llama-1B",
        "the generative pruner, a causal LM's hub id or folder (HtmlRAG's released 1B one)",
        (*ANSWERING, "models", "prune", "eval"),
    ),
    Setting(
        "prune", "tokenizer", Text(metavar="ID_OR_PATH"), None,
        "count budgets with this tokenizer, hub id or folder ('approx': the built-in "
        "approximation; default: the local reader's, else Llama-3's, else the approximation)",
        (*ANSWERING, "models", "prune", "eval"),
    ),
    # -- search: the search engines, in fallback order, and what they may return
    Setting(
        "search", "backends", Names(known=BACKENDS), ("duckduckgo", "brave", "mojeek"),
        f"search backends in fallback order, comma-separated (also {', '.join(API_BACKENDS)}, "
        "bing, google, ...)", SEARCHING,
    ),
    Setting(
        "search", "searxng_url", Url(), None,
        "a SearXNG instance for --backends searxng, e.g. http://127.0.0.1:8888", SEARCHING,
    ),
    Setting(
        "search", "proxy", Url(schemes=("http", "https", "socks5", "socks5h")), None,
        "proxy for every search backend, e.g. socks5://127.0.0.1:9050", SEARCHING,
    ),
    Setting(
        "search", "site", Domains(), (), "search only this site (repeatable)", SEARCHING,
    ),
    Setting(
        "search", "exclude_site", Domains(), (), "never use this site (repeatable)", SEARCHING,
    ),
    Setting(
        "search", "time", Choice(TIMES), None,
        "only results from the last day, week, month or year", SEARCHING,
    ),
    Setting(
        "search", "region", Text(metavar="REGION"), NO_REGION,
        "results for this region, e.g. de-de, us-en (wt-wt: none)", SEARCHING,
    ),
    Setting(
        "search", "safesearch", Choice(("on", "moderate", "off")), "moderate",
        "filter adult results", SEARCHING,
    ),
    Setting(
        "search", "max_results", Integer(), 8, "results per search, at most", ("search",),
    ),
    Setting("search", "timeout", Integer(), 10, "seconds per search request"),
    Setting("search", "retries", Integer(least=0), 2, "retries of a ddgs engine after the first"),
    Setting("search", "backoff", Seconds(), 1.0, "seconds before the first retry, doubled"),
    Setting(
        "search", "brave_api_key", Secret(), None,
        "Brave Search API key (file or environment only)",
        env_aliases=("BRAVE_API_KEY",), secret=True,
    ),
    Setting(
        "search", "tavily_api_key", Secret(), None, "Tavily API key (file or environment only)",
        env_aliases=("TAVILY_API_KEY",), secret=True,
    ),
    # -- web: downloads
    Setting(
        "web", "deadline", Seconds(), 3.0,
        "go on without pages still downloading this long after the first one arrived (they "
        "are cached for the next question)", ANSWERING,
    ),
)  # fmt: skip

BY_KEY = {setting.key: setting for setting in SETTINGS}
BY_NAME = {setting.name: setting for setting in SETTINGS}
assert len(BY_NAME) == len(SETTINGS), "setting names must be unique across sections"
assert {setting.section for setting in SETTINGS} <= set(SECTIONS)


def default(key: str) -> Any:
    """The built-in default of setting ``key`` (``section.name``)."""
    return BY_KEY[key].default


def for_command(command: str) -> list[Setting]:
    """The settings ``command`` takes as options, in declaration order."""
    return [setting for setting in SETTINGS if command in setting.commands]


def find(key: str) -> Setting:
    """The setting ``key`` names (``section.name`` or, names being unique, ``name``);
    ``KeyError`` with the known keys when there is none."""
    setting = BY_KEY.get(key) or BY_NAME.get(key.replace("-", "_"))
    if setting is None:
        raise KeyError(f"no setting {key!r} (known: {', '.join(BY_KEY)})")
    return setting
