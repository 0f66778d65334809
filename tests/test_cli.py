"""The command line as a shell runs it: completion from argcomplete in a real bash, and no
colour under ``NO_COLOR`` on a real terminal (a pseudo-terminal)."""

from __future__ import annotations

import functools
import json
import os
import pty
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from htmlrag_chat.cli import main
from tests.conftest import import_demo

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo"


@pytest.fixture(scope="module")
def command(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An ``htmlrag-chat`` on PATH that runs this checkout with this interpreter."""
    folder = tmp_path_factory.mktemp("bin")
    script = folder / "htmlrag-chat"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m htmlrag_chat "$@"\n')
    script.chmod(0o755)
    return folder


def environment(command: Path, **extra: str) -> dict[str, str]:
    python_path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return (
        os.environ
        | {"PATH": f"{command}{os.pathsep}{os.environ['PATH']}"}
        | {"PYTHONPATH": python_path}
        | extra
    )


@functools.cache
def shell_code(command: Path, shell: str) -> str:
    """What ``htmlrag-chat completion SHELL`` prints (run once per shell: the same program
    prints the same code, and each completion below used to start it again)."""
    done = subprocess.run(
        ["htmlrag-chat", "completion", shell],
        env=environment(command), capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return done.stdout


def complete(command: Path, line: str) -> list[str]:
    """What bash offers for ``line`` (cursor at its end) with the completion function the
    README tells users to install: ``eval "$(htmlrag-chat completion bash)"``."""
    words = line.split() + ([""] if line.endswith(" ") else [])
    script = "\n".join(
        [
            shell_code(command, "bash"),
            f"COMP_LINE={_quote(line)}; COMP_POINT=${{#COMP_LINE}}",
            f"COMP_WORDS=({' '.join(_quote(w) for w in words)}); COMP_CWORD={len(words) - 1}",
            f"_python_argcomplete htmlrag-chat {_quote(words[-1])} {_quote(words[-2])}",
            'printf "%s\\n" "${COMPREPLY[@]}"',
        ]
    )
    done = subprocess.run(
        ["bash", "-c", script],
        env=environment(command),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [word.strip() for word in done.stdout.splitlines() if word.strip()]


def _quote(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def test_bash_completes_commands_options_and_choices(command: Path) -> None:
    assert complete(command, "htmlrag-chat hist") == ["history"]
    assert {"ask", "history", "config", "fetch", "cache"} <= set(complete(command, "htmlrag-chat "))
    assert set(complete(command, "htmlrag-chat ask --rep")) == {"--replay", "--replay-db"}
    assert set(complete(command, "htmlrag-chat history ")) >= {"show", "export", "rm"}
    assert set(complete(command, "htmlrag-chat completion ")) >= {"bash", "zsh", "fish"}
    assert set(complete(command, "htmlrag-chat config ")) >= {"set", "init", "path"}
    assert complete(command, "htmlrag-chat --reader ") == ["local", "openai", "extractive", "auto"]


def test_completion_prints_each_shells_code_and_refuses_others(command: Path) -> None:
    assert "complete" in shell_code(command, "bash") and "htmlrag-chat" in shell_code(
        command, "bash"
    )
    assert shell_code(command, "zsh").startswith("#compdef htmlrag-chat")
    assert "complete --command htmlrag-chat" in shell_code(command, "fish")
    done = subprocess.run(
        ["htmlrag-chat", "completion", "tcsh"],
        env=environment(command), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and "invalid choice: 'tcsh'" in done.stderr


def test_the_hook_answers_zsh_with_descriptions(command: Path) -> None:
    """zsh's completion function (same ``register-python-argcomplete`` code) runs the program
    the same way, asking for ``candidate:description`` lines; checked here without zsh."""
    line = "htmlrag-chat ask --rep"
    done = subprocess.run(
        ["bash", "-c", "htmlrag-chat 8>&1 9>&2 1>/dev/null 2>&1 </dev/null"],
        env=environment(
            command,
            COMP_LINE=line,
            COMP_POINT=str(len(line)),
            _ARGCOMPLETE="1",
            _ARGCOMPLETE_SHELL="zsh",
            _ARGCOMPLETE_SUPPRESS_SPACE="1",
        ),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    offered = dict(item.split(":", 1) for item in done.stdout.split("\013") if item)
    assert set(offered) == {"--replay", "--replay-db"}
    assert offered["--replay-db"].startswith("replay DB instead of the cache file")


def on_a_terminal(command: Path, *argv: str) -> bytes:
    """Run the CLI with stdin, stdout and stderr on a pseudo-terminal (where colour would
    be shown), under NO_COLOR; returns everything it wrote."""
    controller, terminal = pty.openpty()
    env = environment(command, NO_COLOR="1", TERM="xterm-256color")
    for name in ("FORCE_COLOR", "PYTHON_COLORS", "CLICOLOR_FORCE"):
        env.pop(name, None)
    process = subprocess.Popen(
        [sys.executable, "-m", "htmlrag_chat", *argv],
        stdin=terminal, stdout=terminal, stderr=terminal, env=env, close_fds=True,
    )  # fmt: skip
    os.close(terminal)
    output = b""
    while True:
        ready, _, _ = select.select([controller], [], [], 120)
        if not ready:
            process.kill()
            raise AssertionError(f"{argv} wrote nothing for 120 s")
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal closed: the process is done
            break
        if not chunk:
            break
        output += chunk
    os.close(controller)
    assert process.wait(60) == 0, output.decode(errors="replace")
    return output


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return import_demo(tmp_path_factory.mktemp("cli"))


def test_no_colour_under_no_color_on_a_terminal(command: Path, recorded: Path) -> None:
    """Help, a table, and progress lines with a streamed answer (shown on a terminal)."""
    question = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]
    cache = ["--cache", str(recorded)]
    runs = [
        ["--help"],  # argparse colours help from Python 3.14, unless NO_COLOR
        [*cache, "config"],
        [
            *cache,
            "--replay",
            "fetch",
            "https://www.theverge.com/2019/7/3/20680681/ios-13-beta-3-facetime-attention-correction-eye-contact",
        ],
        [*cache, "--replay", "ask", question, "--reader", "extractive", "--pruner", "bm25"],
    ]
    for argv in runs:
        output = on_a_terminal(command, *argv)
        assert output.strip() and b"\x1b" not in output, (argv, output[:400])


# -- arguments that are not UTF-8 (issue 31)

NOT_UTF8 = [
    [b"ask", b"caf\xe9"],
    [b"history", b"--search", b"\xff"],
    [b"config", b"set", b"model", b"ab\xffcd"],
    [b"search", b"\xc3\x28"],
    [b"clean", b"page-\xe9.html"],
    [b"--cache", b"\xfe.db", b"history"],
    [b"mcp", b"--http", b"--host", b"\x80"],
    [b"ask", b"--site", b"\xe9.example", b"q"],
]


@pytest.mark.parametrize("argv", NOT_UTF8, ids=lambda argv: b" ".join(argv).decode("latin-1"))
def test_an_argument_that_is_not_utf8_is_one_line_and_exit_2(
    argv: list[bytes], tmp_path: Path
) -> None:
    """As a shell passes them: bytes, which Python decodes with surrogate escapes."""
    env = {
        **os.environ,
        "HTMLRAG_CHAT_CACHE": str(tmp_path / "c.db"),
        "XDG_CONFIG_HOME": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable.encode(), b"-m", b"htmlrag_chat", *argv],
        capture_output=True, env=env, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2 and err.count("\n") == 1, err
    assert "is not UTF-8 text" in err and "Traceback" not in err and done.stdout == b""
    assert list(tmp_path.iterdir()) == []  # nothing written: no cache, no settings file


def test_the_refusal_shows_the_bytes_that_are_not_utf8_as_escapes(capsys) -> None:
    from htmlrag_chat.cli import main

    assert main(["ask", "caf\udce9"]) == 2
    assert capsys.readouterr().err == (
        "htmlrag-chat: argument 'caf\\xe9' is not UTF-8 text (the terminal or the locale "
        "sends another encoding)\n"
    )


def test_a_question_as_the_first_word_is_asked(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``htmlrag-chat "QUESTION"`` is ``ask``, the options before it included."""
    question = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]
    argv = ["--replay-db", str(recorded), "--reader", "extractive", "--pruner", "bm25", question]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "ARKit" in out and "[3]" in out


def test_chat_is_a_command_and_opens_the_chat_app(capsys: pytest.CaptureFixture[str]) -> None:
    """``htmlrag-chat chat`` is the bare command: here, with no terminal, its one line."""
    assert main(["chat", "--reader", "extractive"]) == 2
    assert "the chat app needs a terminal" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["aks", "x"], "invalid choice: 'aks'; did you mean 'ask'? (see htmlrag-chat --help)"),
        (["histroy"], "did you mean 'history'?"),
        (["history", "showw", "1"], "did you mean 'show'? (see htmlrag-chat history --help)"),
        (["ask", "--qiuet", "x"], "--qiuet; did you mean --quiet? (see htmlrag-chat ask --help)"),
        (["ls"], "invalid choice: 'ls' (choose from 'ask', 'research', 'chat',"),
        # Two letters swapped: the option they spell, not difflib's --render; and the words
        # argparse left after the option (its value, the question) are not named.
        (
            ["ask", "--raeder", "extractive", "Which Apple framework is it?"],
            "htmlrag-chat: unrecognized option: --raeder; did you mean --reader? "
            "(see htmlrag-chat ask --help)",
        ),
        (["ask", "--pruenr", "bm25", "x"], "unrecognized option: --pruenr; did you mean --pruner?"),
        (
            ["ask", "--qiuet", "--raeder", "extractive", "Where is it?"],
            "unrecognized options: --qiuet --raeder; did you mean --quiet (for --qiuet), "
            "--reader (for --raeder)?",
        ),
    ],
)
def test_a_misspelt_word_gets_the_nearest_name_and_its_commands_help(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1
    assert "?;" not in err  # no question quoted as an unknown argument


def test_a_word_with_no_near_command_says_how_to_ask_it(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit):
        main(["ls"])
    assert "to ask it: htmlrag-chat ask 'ls'" in capsys.readouterr().err


def test_help_names_an_options_choices_once_and_no_empty_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["ask", "--help"])
    out = capsys.readouterr().out
    assert "--pruner, --scorer {two-stage,fused,embed,bm25,gen}\n" in out
    assert "(default )" not in out and "--site DOMAIN" in out


def test_fetch_on_a_terminal_prints_a_table_not_json(command: Path, recorded: Path) -> None:
    url = "https://www.theverge.com/2019/7/3/20680681/ios-13-beta-3-facetime-attention-correction-eye-contact"
    shown = on_a_terminal(command, "--cache", str(recorded), "fetch", url).decode()
    assert "OUTCOME  STATUS" in shown and f"ok          200  142.2 kB  cache  {url}" in shown
    assert '{"url"' not in shown


@pytest.fixture(scope="module")
def deprecated_setting_lm(tmp_path_factory: pytest.TempPathFactory, tiny_lm_dir: Path) -> Path:
    """The tiny Llama with a generation setting that transformers 5 deprecates (a
    FutureWarning as it loads), as a model from the hub may carry."""
    folder = tmp_path_factory.mktemp("deprecated") / "lm"
    shutil.copytree(tiny_lm_dir, folder)
    path = folder / "generation_config.json"
    setting = json.loads(path.read_text(encoding="utf-8")) | {"continuous_batching_config": {}}
    path.write_text(json.dumps(setting), encoding="utf-8")
    return folder


def test_library_deprecation_warnings_show_only_with_verbose(
    command: Path, recorded: Path, tiny_lm_dir: Path, deprecated_setting_lm: Path
) -> None:
    """A default ``ask`` with a local reader and pruner prints no FutureWarning (the user
    can do nothing about transformers' deprecations); ``-v`` shows them."""
    question = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]
    argv = [
        sys.executable, "-m", "htmlrag_chat", "--cache", str(recorded), "--replay", "ask",
        question, "--reader", "local", "--model", str(deprecated_setting_lm),
        "--gen-model", str(tiny_lm_dir), "--pages", "2", "--max-tokens", "8",
    ]  # fmt: skip
    runs = [
        subprocess.run(
            [*argv, *verbose], env=environment(command), capture_output=True, text=True, timeout=600
        )
        for verbose in ([], ["-v"])
    ]
    assert [run.returncode for run in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    default, loud = (run.stderr for run in runs)
    assert "Warning" not in default, default
    assert "FutureWarning: Passing ContinuousBatchingConfig" in loud
