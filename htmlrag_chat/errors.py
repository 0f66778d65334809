"""Errors a user can act on; the CLI prints them as one line and exits with their code.

Exit codes (documented in the README):
0 success, 1 internal error, 2 usage error, 3 an input could not be used.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INPUT = 3


class UserError(Exception):
    """A failure caused by what the user gave us, reported without a traceback."""

    exit_code = EXIT_USAGE


class InputError(UserError):
    """An input file or page cannot be used (missing, binary, too large, bad encoding)."""

    exit_code = EXIT_INPUT
