"""The command line as a person types it, before argparse reads it: a question given
without ``ask``, and the nearest spelling of a misspelt command, action or option.

argparse answers ``htmlrag-chat "Who designed the Eiffel tower?"`` with "invalid choice"
and ``ask --qiuet`` with a pointer to the top-level help. A first word that is a question
(it has a space or ends with ``?``) is asked, as if ``ask`` came before it; any other word
that is no command keeps argparse's error, to which ``Parser.error`` adds the closest
name (two letters swapped first, then ``difflib``) and the help of the command that was
being read; an unknown option is named alone, without the words argparse left after it.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Iterable, Sequence

ASK = "ask"
_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$", re.S)
_UNRECOGNIZED = "unrecognized arguments: "


def nearest(word: str, names: Iterable[str]) -> str | None:
    """The name ``word`` most likely misspells, if one is close enough: two neighbouring
    letters swapped first (``--raeder`` is ``--reader``, though difflib finds ``--render``
    as close), then difflib's closest."""
    names = list(names)
    swapped = next((name for name in names if _transposed(word, name)), None)
    if swapped is not None:
        return swapped
    found = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    return found[0] if found else None


def _transposed(word: str, name: str) -> bool:
    """Whether ``name`` is ``word`` with two neighbouring characters swapped."""
    if len(word) != len(name) or word == name:
        return False
    apart = [i for i, (a, b) in enumerate(zip(word, name, strict=True)) if a != b]
    return (
        len(apart) == 2
        and apart[1] == apart[0] + 1
        and (word[apart[0]], word[apart[1]]) == (name[apart[1]], name[apart[0]])
    )


def is_question(word: str) -> bool:
    """A first word no command could be: words with spaces, or a ``?`` at the end."""
    return bool(word.strip()) and (len(word.split()) > 1 or word.rstrip().endswith("?"))


def with_ask(parser: argparse.ArgumentParser, words: Sequence[str]) -> list[str]:
    """``words`` with ``ask`` put before a first positional word that is a question and no
    command; the options before it (the chat app's, which ``ask`` takes too) stay there."""
    words = list(words)
    commands = _commands(parser)
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            return words
        if word.startswith("-") and word != "-":
            action = parser._option_string_actions.get(word.partition("=")[0])
            takes_value = action is not None and action.nargs != 0 and "=" not in word
            index += 2 if takes_value else 1
            continue
        if word not in commands and is_question(word):
            return [*words[:index], ASK, *words[index:]]
        return words
    return words


def explain(message: str, parser: argparse.ArgumentParser, unknown: Sequence[str] = ()) -> str:
    """argparse's ``message`` with the closest valid name added: to an invalid choice (a
    command, an action, a value) or to each unrecognized option of ``unknown``."""
    choice = _CHOICE.search(message)
    if choice is not None:
        word, allowed = choice.group(1), re.findall(r"'([^']*)'", choice.group(2))
        guess = nearest(word, allowed)
        said = message[: choice.start()] + f"invalid choice: {word!r}"
        if guess is not None:
            return f"{said}; did you mean {guess!r}?"
        ask = f"; to ask it: {parser.prog} ask {word!r}" if " " not in parser.prog else ""
        return f"{said} (choose from {choice.group(2)}){ask}"
    if message.startswith(_UNRECOGNIZED) and unknown:
        flags = [word for word in unknown if word.startswith("-") and word != "-"]
        if flags:  # the words after one are its value or the question: not what is wrong
            message = f"unrecognized option{'s' if len(flags) > 1 else ''}: {' '.join(flags)}"
        options = list(parser._option_string_actions)
        guesses = [
            (word, guess) for word in flags if (guess := nearest(word.partition("=")[0], options))
        ]
        if len(guesses) == 1:
            return f"{message}; did you mean {guesses[0][1]}?"
        if guesses:
            said = ", ".join(f"{guess} (for {word})" for word, guess in guesses)
            return f"{message}; did you mean {said}?"
    return message


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()
