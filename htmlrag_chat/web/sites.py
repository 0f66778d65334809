"""``--site`` and ``--exclude-site`` as one rule for results and downloads alike.

Backends apply the sites their own way where they have one (operators, parameters), but not
every engine honours them, a cached or recorded search was made without them, and a page
may redirect elsewhere; so every result and every download is checked here too.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from htmlrag_chat.settings.kinds import host_name
from htmlrag_chat.web.settings import SearchSettings


def on_site(host: str, site: str) -> bool:
    """``host`` is ``site`` or one of its subdomains (both as ``host_name`` spells them)."""
    return host == site or host.endswith("." + site)


def allowed(url: str, settings: SearchSettings) -> bool:
    """Whether a page at ``url`` may be used under the settings' sites, its host compared
    as DNS compares it (``EVIL.example.`` is ``evil.example``, ``bücher.de`` is
    ``xn--bcher-kva.de``). A host with no ASCII form, which no download can reach, is
    left out."""
    if not settings.site and not settings.exclude_site:
        return True
    try:
        host = host_name(urlsplit(url).hostname or "").removeprefix("www.")
    except (UnicodeError, ValueError):
        return False
    if any(on_site(host, site) for site in settings.exclude_site):
        return False
    return not settings.site or any(on_site(host, site) for site in settings.site)


def refusal(settings: SearchSettings) -> str:
    """Why a page was left out, for users."""
    if settings.site:
        return f"not on {' or '.join(settings.site)} (--site)"
    return "an excluded site (--exclude-site)"
