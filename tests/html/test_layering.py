"""The HTML core sits below every other layer: it may import only itself, the token-counting
protocol and the errors. Read from the import statements of the source, so a cycle cannot
hide behind a lazy import inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import htmlrag_chat
import htmlrag_chat.html

PACKAGE = Path(htmlrag_chat.__file__).parent
ALLOWED = ("htmlrag_chat.html", "htmlrag_chat.counting", "htmlrag_chat.errors")
HIGHER = (
    "reader",
    "agent",
    "tui",
    "commands",
    "store",
    "web",
    "scoring",
    "tokens",
    "pipeline",
    "wiring",
    "conversations",
    "eval",
    "hub",
    "recorder",
)


def package_imports(path: Path) -> list[str]:
    """Every module of the package that ``path`` imports, at any depth of the file."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # "from htmlrag_chat import tokens" imports the module htmlrag_chat.tokens.
            if node.module == "htmlrag_chat":
                names = [f"htmlrag_chat.{alias.name}" for alias in node.names]
            else:
                names = [node.module]
        elif isinstance(node, ast.ImportFrom):
            raise AssertionError(f"{path.name}: relative import; the project spells them out")
        else:
            continue
        found.extend(name for name in names if name.split(".")[0] == "htmlrag_chat")
    return found


def test_html_modules_import_no_higher_layer() -> None:
    modules = sorted(Path(htmlrag_chat.html.__file__).parent.glob("*.py"))
    assert len(modules) > 5  # the glob found the real package
    offenders = {
        f"{path.name}: {name}"
        for path in modules
        for name in package_imports(path)
        if not any(name == allowed or name.startswith(allowed + ".") for allowed in ALLOWED)
    }
    assert offenders == set()


def test_the_allow_list_excludes_every_higher_layer() -> None:
    """Guards the allow-list itself: none of the layers above html slips into it."""
    for layer in HIGHER:
        name = f"htmlrag_chat.{layer}"
        assert (PACKAGE / layer).exists() or (PACKAGE / f"{layer}.py").exists(), layer
        assert not any(name == a or name.startswith(a + ".") for a in ALLOWED), layer


def test_counting_imports_nothing_of_the_package() -> None:
    assert package_imports(PACKAGE / "counting.py") == []


def test_the_reader_finds_imports_inside_functions(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from htmlrag_chat.html.dom import drop\n"
        "def f():\n"
        "    from htmlrag_chat import tokens\n"
        "    import htmlrag_chat.reader.openai\n",
        encoding="utf-8",
    )
    assert package_imports(source) == [
        "htmlrag_chat.html.dom",
        "htmlrag_chat.tokens",
        "htmlrag_chat.reader.openai",
    ]
