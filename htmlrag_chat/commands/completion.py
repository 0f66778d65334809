"""``completion bash|zsh|fish``: the shell code that completes ``htmlrag-chat``'s commands,
options and choices, as ``gh completion`` prints it. argcomplete (a dependency) writes it;
the completions themselves come from running this parser, so they never drift from it."""

from __future__ import annotations

import argparse
import sys

from htmlrag_chat.base.errors import EXIT_OK
from htmlrag_chat.commands.common import PROG, add_command

SHELLS = ("bash", "zsh", "fish")
EXAMPLES = (
    ('eval "$(htmlrag-chat completion bash)"', "in ~/.bashrc"),
    ('eval "$(htmlrag-chat completion zsh)"', "in ~/.zshrc"),
    ("htmlrag-chat completion fish > ~/.config/fish/completions/htmlrag-chat.fish", "fish"),
)


def add_commands(commands: argparse._SubParsersAction) -> None:
    command = add_command(
        commands, "completion", "print the shell code that completes htmlrag-chat",
        run_completion, examples=EXAMPLES,
    )  # fmt: skip
    command.add_argument("shell", choices=SHELLS, help="the shell to complete in")


def run_completion(args: argparse.Namespace) -> int:
    import argcomplete

    sys.stdout.write(argcomplete.shellcode([PROG], shell=args.shell))
    return EXIT_OK
