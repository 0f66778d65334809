"""Every setting, declared once: its section, kind, default, help and the commands that take
it as an option.

From this list come the options of each command (``commands/options.py``), the checks of
the config file and of the environment (``settings/layered.py``), ``config``'s table with
each value's origin, and ``config set`` / ``config init`` (``settings/edit.py``). A setting
``name`` in section ``[sec]`` is ``name = ...`` under ``[sec]`` in the file,
``HTMLRAG_CHAT_NAME`` in the environment and ``--name`` on the command line of the
commands listed in ``commands``. Names are unique across sections, so an option or a
variable names one setting.

This module imports nothing of the package but the value kinds, so every layer may read a
default from it (``default("research.rounds")``) instead of writing the number again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from htmlrag_chat.settings.kinds import (
    Choice,
    Device,
    Domains,
    IdOrPath,
    Integer,
    Kind,
    Names,
    Ports,
    Seconds,
    Secret,
    Switch,
    Text,
    Url,
)

ENV_PREFIX = "HTMLRAG_CHAT_"
SECTIONS = ("reader", "research", "prune", "search", "web", "mcp")
READERS = ("local", "openai", "extractive", "auto")
JUDGES = ("auto", "on", "off")
PLANS = ("auto", "on", "off")  # a first question's plan beside its search
# ``two-stage`` is HtmlRAG's (the fused first stage, then the generative pruner; the first
# stage alone when the pruner is not installed); the others are one stage with one scorer.
PRUNERS = ("two-stage", "fused", "embed", "bm25", "gen")
# ``prune.budget``'s default, by where the reader prefills: on this machine's CPU the prefill
# is the wait (docs/benchmarks.md), while a server or a GPU reads 4096 tokens (the paper's
# final budget) in a second or two; without a reader (``prune``, ``eval``) it is 4096. On
# the CPU, 1024: Qwen2.5-1.5B answered as many dev questions right at 1024 as at 2048 and
# more, in about half the prefill, and 512 loses answers on the harder held-out pages
# (docs/evaluation.md, "Answers from real readers"). Here so that each reader backend, which
# knows where it prefills, and the pruning share them.
CPU_BUDGET = 1024
BUDGET = 4096
# How the reader receives the pruned pages (``html/rendering.py``, which this must match).
# HTML by default: with Qwen2.5-1.5B on held-out questions, Markdown answered no better at
# the same budget (docs/evaluation.md, "Answers from real readers").
RENDERINGS = ("html", "markdown", "text")
# The commands that answer questions take the same options; ``config`` shows what they
# would make of the file and the environment.
ANSWERING = ("chat", "ask", "research", "config", "mcp")
# The search engines tried when the settings name none; which names exist is the engines'
# table's (``web/engines.py``), drawn in with ``allow``.
DEFAULT_ENGINES = ("duckduckgo", "brave", "mojeek")
TIMES = ("day", "week", "month", "year")
NO_REGION = "wt-wt"  # ddgs's "no region"; the API backends then send none
SEARCHING = (*ANSWERING, "search")
# Upper bounds of the numbers below, each past any real use: the largest context windows
# are a few million tokens, and a block is a paragraph, not a book.
MAX_TOKENS = 1_000_000
MAX_CONTEXT = 10_000_000
MAX_WORDS = 100_000
# The largest window of today's open readers (Llama 3.1: 128K tokens).
MAX_BUDGET = 131_072


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
    default_help: str = ""  # how the default is found, when it is not one value (None)
    # A value to show where there is no default (``config init``'s commented-out line, valid
    # TOML for this kind once uncommented).
    example: Any = None

    @property
    def key(self) -> str:
        return f"{self.section}.{self.name}"

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> tuple[str, ...]:
        return (ENV_PREFIX + self.name.upper(), *self.env_aliases)

    @property
    def described(self) -> str:
        """``help`` as the command line and docs/settings.md show it: with how a default
        that is no one value is found, and whether the option may be given again. (A tool
        parameter or a palette entry has its own default and takes one value: ``help``.)"""
        text = self.help
        if self.default_help:
            text += f" (default: {self.default_help})"
        return text + (" (repeatable)" if self.kind.repeatable else "")


# The settings of the program itself. A part registered above the base (a search engine, a
# reader backend) declares its own with ``declare``, which adds them to this list in place.
SETTINGS: list[Setting] = [
    # -- reader: who writes the answer
    Setting(
        "reader", "reader", Choice(READERS), "auto",
        "auto: the configured server, else Ollama, LM Studio, llama.cpp or vLLM found on "
        "127.0.0.1, else a local model on disk, else extractive; local (a GGUF file by "
        "llama.cpp, else transformers), openai (the server at --base-url), extractive (no LLM)",
        (*ANSWERING, "models", "eval"),
    ),
    Setting(
        "reader", "model", IdOrPath(metavar="MODEL"), None,
        "reader model: hub id, local folder, or the server's model name",
        (*ANSWERING, "models", "eval"), short="-m", example="qwen2.5:7b",
        default_help="the server's best chat model, else meta-llama/Llama-3.1-8B-Instruct",
    ),
    Setting(
        "reader", "base_url", Url(), None,
        "an OpenAI-compatible server, e.g. http://localhost:11434/v1",
        (*ANSWERING, "models", "eval"),
        example="http://localhost:11434/v1",
    ),
    Setting(
        "reader", "api_key", Secret(), None,
        "the server's API key (file or environment only, never an option)",
        env_aliases=("OPENAI_API_KEY",), secret=True, example="sk-...",
    ),
    Setting(
        "reader", "max_tokens", Integer(most=MAX_TOKENS), 512, "the longest answer, in tokens",
        (*ANSWERING, "eval"),
    ),
    Setting(
        "reader", "context_tokens", Integer(most=MAX_CONTEXT), None,
        "the server's context window in tokens, when it does not say (the budget is lowered "
        "to fit)", (*ANSWERING, "eval"), example=8192,
    ),
    Setting(
        "reader", "device", Device(), "auto",
        "where models run: auto (cuda, then mps, then cpu), cpu, cuda, cuda:N, mps",
        (*ANSWERING, "models", "prune", "eval"),
    ),
    Setting(
        "reader", "correct_citations", Switch(), True,
        "show the source that backs a sentence in place of a cited one the check proves "
        "wrong (marked \u2020, and said under the answer); --no-correct-citations flags it "
        "instead", (*ANSWERING, "eval"),
    ),
    Setting(
        "reader", "judge", Choice(JUDGES), "auto",
        "who judges the sentences the evidence check cannot decide by their words: auto (the "
        "reader when it is an LLM of 1B parameters or more, else --judge-model), on, off",
        (*ANSWERING, "eval"),
    ),
    Setting(
        "reader", "judge_model", IdOrPath(metavar="GGUF"), None,
        "a GGUF chat model on disk that judges for a reader that cannot (the extractive "
        "reader, a small model)", (*ANSWERING, "eval"),
        example="~/models/Qwen2.5-Coder-1.5B-Instruct-Q4.gguf",
    ),
    Setting(
        "reader", "probe_ports", Ports(), None,
        "127.0.0.1 ports --reader auto asks for a server; empty: none",
        default_help="those of Ollama, LM Studio, llama.cpp and vLLM", example=(11434, 8080),
    ),
    # -- research: how far a question looks
    Setting("research", "rounds", Integer(most=10), 2, "search rounds at most", ANSWERING),
    Setting("research", "pages", Integer(most=20), 10, "pages read per round", ANSWERING),
    Setting(
        "research", "max_queries", Integer(most=10), 3,
        "searches per round at most, the sub-queries of a comparison included", ANSWERING,
    ),
    Setting(
        "research", "plan", Choice(PLANS), "auto",
        "a first question's sub-queries (for a comparison), planned by the reader beside the "
        "search of the question as typed: auto (a reader in this process on a GPU), on, off",
        ANSWERING,
    ),
    Setting(
        "research", "max_parts", Integer(most=5), 5,
        "research: the reader splits the question into at most this many parts, each "
        "searched and answered on its own", ("research", "config", "mcp"),
    ),
    # Here the sources the user names (--docs, --saved) declare theirs (sources/registry.py).
    Setting(
        "research", "web", Switch(), True,
        "search the web; --no-web reads only --docs and --saved and touches no network",
        ANSWERING,
    ),
    # -- prune: what the reader gets
    Setting(
        "prune", "pruner", Choice(PRUNERS), "two-stage",
        "two-stage (the fused stage, then the generative pruner when installed), or one "
        "stage of: fused (BM25 + embeddings), embed, bm25, gen", (*ANSWERING, "models", "prune"),
        aliases=("--scorer",),
    ),
    Setting(
        "prune", "budget", Integer(most=MAX_BUDGET), None,
        "tokens of pruned pages the reader gets, as --render writes them", (*ANSWERING, "prune"),
        default_help="1024 for a reader that prefills on this machine's CPU, else 4096",
        example=2048,
    ),
    Setting(
        "prune", "render", Choice(RENDERINGS), "html",
        "how the reader gets the pruned pages: html (tags kept), markdown (headings, lists "
        "and table rows kept, fewer tokens) or text; the budget counts what it gets",
        (*ANSWERING, "prune"),
    ),
    Setting(
        "prune", "coarse_budget", Integer(most=MAX_CONTEXT), None,
        "two-stage: tokens the first stage keeps", ("prune",), default_help="twice --budget",
        example=4096,
    ),
    Setting(
        "prune", "max_words", Integer(most=MAX_WORDS), None, "words per block of the last stage",
        ("prune",), default_help="an eighth of its budget, 32-256", example=128,
    ),
    Setting(
        "prune", "coarse_max_words", Integer(most=MAX_WORDS), None,
        "two-stage: words per block of the first stage", ("prune",),
        default_help="from its budget", example=256,
    ),
    Setting(
        "prune", "embed_model", IdOrPath(),
        "sentence-transformers/all-MiniLM-L6-v2",
        "the first stage's sentence-transformers model, hub id or folder (the default is "
        "bundled)", (*ANSWERING, "models", "prune", "eval"),
    ),
    Setting(
        "prune", "gen_model", IdOrPath(), "zstanjj/HTML-Pruner-Llama-1B",
        "the generative pruner, a causal LM's hub id or folder (HtmlRAG's released 1B one)",
        (*ANSWERING, "models", "prune", "eval"),
    ),
    Setting(
        "prune", "tokenizer", IdOrPath(), None,
        "count budgets with this tokenizer: hub id, folder, or 'approx' for the built-in "
        "approximation", (*ANSWERING, "models", "prune", "eval"),
        default_help="the local reader's, else Llama-3's, else the approximation",
        example="approx",
    ),
    # -- search: the search engines, in fallback order, and what they may return
    Setting(
        "search", "backends", Names(), DEFAULT_ENGINES,
        "search engines in fallback order, comma-separated (docs/search.md lists them)",
        SEARCHING,
    ),
    Setting(
        "search", "searxng_url", Url(), None,
        "a SearXNG instance for --backends searxng, e.g. http://127.0.0.1:8888", SEARCHING,
        example="http://127.0.0.1:8888",
    ),
    Setting(
        "search", "proxy", Url(schemes=("http", "https", "socks5", "socks5h")), None,
        "proxy for every search backend, e.g. socks5://127.0.0.1:9050", SEARCHING,
        example="socks5://127.0.0.1:9050",
    ),
    Setting(
        "search", "site", Domains(), (), "search only this site", SEARCHING,
        example=("docs.python.org",),
    ),
    Setting(
        "search", "exclude_site", Domains(), (), "never use this site", SEARCHING,
        example=("pinterest.com",),
    ),
    Setting(
        "search", "time", Choice(TIMES), None,
        "only results from the last day, week, month or year", SEARCHING, example="week",
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
        "search", "max_results", Integer(most=100), 8, "results per search, at most", ("search",),
    ),
    Setting("search", "timeout", Integer(most=600), 10, "seconds per search request"),
    Setting(
        "search", "retries", Integer(most=5, least=0), 2,
        "retries of a ddgs engine after the first",
    ),
    Setting(
        "search", "backoff", Seconds(most=10.0), 1.0, "seconds before the first retry, doubled",
    ),
    # -- web: downloads
    Setting(
        "web", "deadline", Seconds(most=600.0), 3.0,
        "go on without pages still downloading this long after the first one arrived (they "
        "are cached for the next question)", ANSWERING,
    ),
    # -- mcp: the server for agents
    Setting(
        "mcp", "mcp_token", Secret(), None,
        "the bearer token mcp --http requires (file or environment only; unset: a new one "
        "each start, printed on stderr)", secret=True,
    ),
]  # fmt: skip

BY_KEY = {setting.key: setting for setting in SETTINGS}
BY_NAME = {setting.name: setting for setting in SETTINGS}
assert len(BY_NAME) == len(SETTINGS), "setting names must be unique across sections"
assert {setting.section for setting in SETTINGS} <= set(SECTIONS)


def declare(*settings: Setting, before: str | None = None) -> None:
    """Draw into the tree the settings a registration owns (a search engine's key, a reader
    backend's option, a page source's paths), each after the last of its section, or just
    before setting ``before`` (a key), so that the options, the file's checks, ``config``
    and the palette take them like any other. The registration's module calls this when it
    is imported; declaring the same setting again changes nothing, and a name that another
    setting holds is a programming error."""
    for setting in settings:
        if BY_KEY.get(setting.key) == setting:
            continue
        if setting.name in BY_NAME or setting.section not in SECTIONS:
            raise ValueError(f"setting {setting.key} clashes or has no section")
        if before is not None:
            SETTINGS.insert(SETTINGS.index(BY_KEY[before]), setting)
        else:
            last = max(i for i, s in enumerate(SETTINGS) if s.section == setting.section)
            SETTINGS.insert(last + 1, setting)
        BY_KEY[setting.key] = BY_NAME[setting.name] = setting


def allow(key: str, names: tuple[str, ...]) -> None:
    """Make ``names`` the values setting ``key`` (a ``Names`` kind) accepts: the names a
    registration's table holds (the search engines), checked wherever the setting is read."""
    old = BY_KEY[key]
    kind = old.kind
    assert isinstance(kind, Names), f"{key} takes no names"
    new = replace(old, kind=replace(kind, known=names))
    SETTINGS[SETTINGS.index(old)] = BY_KEY[key] = BY_NAME[old.name] = new


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
