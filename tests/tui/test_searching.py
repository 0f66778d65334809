"""Search controls from the command palette, under Pilot, against a loopback SearXNG."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from htmlrag_chat.settings.tree import find, for_command
from htmlrag_chat.store.db import Store
from htmlrag_chat.tui.searching import fixed_choices, typed_choice
from htmlrag_chat.web.settings import SearchSettings
from tests.loopback import serve_app
from tests.search_apis import SearchApis
from tests.tui.conftest import SIZE, ask, make_app, options, run, wait_until
from tests.tui.test_readers import choose


def test_typed_commands_stand_for_settings_and_bad_values_for_none() -> None:
    current = SearchSettings(site=("a.org",))
    assert typed_choice(current, "site www.example.org").settings.site == ("a.org", "example.org")
    assert typed_choice(current, "Search: exclude-site pinterest.com").settings.exclude_site == (
        "pinterest.com",
    )
    assert typed_choice(current, "region de-de").settings.region == "de-de"
    assert typed_choice(current, "backends searxng,brave").settings.backends == ("searxng", "brave")
    assert typed_choice(current, "time week").settings.time == "week"
    proxy = typed_choice(current, "proxy socks5://127.0.0.1:9050")
    assert proxy.settings.proxy == "socks5://127.0.0.1:9050"
    # Each value is read as the option reads it: what --time or --backends refuse, too.
    for nothing in ("backends altavista", "time fortnight", "site", "site a b", "weather in Paris"):
        assert typed_choice(current, nothing) is None
    titles = [choice.title for choice in fixed_choices(replace(current, time="week"))]
    assert "Search: time none (default)" in titles and "Search: site none (default)" in titles
    assert "Search: time week" not in titles and "Search: time day" in titles
    assert "Search: safesearch off" in titles and "Search: safesearch moderate" not in titles


def test_the_palette_s_words_are_the_settings_options_and_help() -> None:
    """Drawn from the settings tree as the command line's options are: a search setting
    the chat app takes is in the palette under its option's name, with its help."""
    taken = [s for s in for_command("chat") if s.section == "search"]
    choices = fixed_choices(SearchSettings())
    for setting in taken:
        name = setting.option.removeprefix("--")
        listed = [c for c in choices if c.title.startswith(f"Search: {name} ")]
        assert listed, name
        assert all(setting.help in choice.help for choice in listed), name
    typed = typed_choice(SearchSettings(), "exclude-site pinterest.com")
    assert typed.help == find("search.exclude_site").help


def test_the_palette_sets_the_site_and_time_of_the_next_searches(
    history: Store, tmp_path: Path
) -> None:
    apis = SearchApis()  # no results: the question ends in a message, the request is the point

    async def scenario() -> None:
        async with serve_app(apis.app()) as port:
            settings = SearchSettings(backends=("searxng",), searxng_url=f"http://127.0.0.1:{port}")
            with Store.open(tmp_path / "cache.db") as cache:
                app = make_app(
                    cache, history, replace(options(replay=False), search=settings), tmp_path
                )
                async with app.run_test(size=SIZE) as pilot:
                    await choose(pilot, "site example.org", "Search: site example.org")
                    await choose(pilot, "time week", "Search: time week")
                    await ask(pilot, "what is htmlrag")
                    await wait_until(pilot, lambda: len(apis.requests) == 1, 10, "the search")
                    assert app.options.search.site == ("example.org",)
                    await pilot.press("ctrl+n")  # a new conversation: the settings it began with
                    await wait_until(pilot, lambda: app.options.search == settings, 5, "reset")

    run(scenario())
    (sent,) = apis.sent("searxng")
    assert sent.params["q"] == "what is htmlrag site:example.org"
    assert sent.params["time_range"] == "week"
