"""Errors a user can act on; the CLI prints them as one line and exits with their code.

Exit codes (documented in the README and ``--help``):
0 success, 1 internal error, 2 usage error (or a model that cannot be loaded), 3 an input
could not be used (for ``fetch``: no URL came back ok), 4 the cache file cannot be used,
5 the web could not be searched or the reader's server could not be reached, 6 ``fetch``
got some URLs ok (downloaded or cached) and not others, so a script can tell "partly"
from "all" and "none".
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_STORE = 4
EXIT_NETWORK = 5
EXIT_PARTIAL = 6


class UserError(Exception):
    """A failure caused by what the user gave us, reported without a traceback."""

    exit_code = EXIT_USAGE


class InputError(UserError):
    """An input file or page cannot be used (missing, binary, too large, bad encoding)."""

    exit_code = EXIT_INPUT


class ModelUnavailable(UserError):
    """A model or tokenizer that cannot be loaded here (not cached, offline, gated).

    ``next_step`` is what the user can do about it, where the raiser knows the model's role
    (``models pull reader``, ``--reader extractive``): it ends the one-line message, and the
    chat app, which otherwise adds its own advice, sees it is there."""

    def __init__(self, message: str, next_step: str = "") -> None:
        super().__init__(f"{message}; {next_step}" if next_step else message)
        self.next_step = next_step


def with_next_step(error: ModelUnavailable, next_step: str) -> ModelUnavailable:
    """``error`` ending with ``next_step``, unless it says what to do already (its own next
    step, or an extra to install: ``MissingExtra`` names the pip line)."""
    if error.next_step or type(error) is not ModelUnavailable:
        return error
    return ModelUnavailable(str(error), next_step)
