from __future__ import annotations

import json
import shutil
import socket
import sys
from pathlib import Path

from htmlrag_chat.base.counting import HFTokenCounter
from htmlrag_chat.pruning.tokens import ApproxTokenCounter, load_token_counter
from tests.conftest import PAGES


def hand_made_tokenizer(folder: Path) -> Path:
    """A byte-level BPE whose merges are listed here, so every count below is known by hand:
    "h e" -> "he", "l l" -> "ll", "he ll" -> "hell", "hell o" -> "hello", "< /" -> "</" and
    "Ġ hello" -> "Ġhello" (Ġ is the byte-level space)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {char: index for index, char in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    merges = [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"), ("<", "/"), ("Ġ", "hello")]
    for left, right in merges:
        vocab[left + right] = len(vocab)
    bos = vocab["<|begin_of_text|>"] = len(vocab)
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    # Like Llama's: encoding adds BOS unless told not to, which counting must not count.
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", bos)]
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<|begin_of_text|>")
    fast.save_pretrained(folder)
    return folder


# Counts worked out by hand from the merges above; special tokens (BOS) are never counted.
KNOWN_COUNTS = {
    "hello": 1,
    "hellohello": 2,
    "hello hello": 2,  # "hello", "Ġhello"
    "<p>hello</p>": 7,  # "<", "p", ">", "hello", "</", "p", ">"
    "hello, hello": 3,  # "hello", ",", "Ġhello"
    "héllo": 5,  # "h", the two bytes of "é", "ll", "o"
    "東京": 6,  # three bytes each, no merges
    "": 0,
}


def test_a_local_tokenizer_counts_exactly_what_it_encodes(tmp_path):
    from transformers import AutoTokenizer

    folder = hand_made_tokenizer(tmp_path)
    assert len(AutoTokenizer.from_pretrained(folder)("hello")["input_ids"]) == 2  # BOS added
    loaded = load_token_counter(str(folder))
    counter = loaded.counter
    assert isinstance(counter, HFTokenCounter) and counter.exact and loaded.notice is None
    assert {text: counter.count(text) for text in KNOWN_COUNTS} == KNOWN_COUNTS
    assert counter.count_many(list(KNOWN_COUNTS)) == list(KNOWN_COUNTS.values())


def test_counts_on_real_pages_match_the_tokenizers_own_encoding(tiny_tokenizer_dir):
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(tiny_tokenizer_dir)
    counter = load_token_counter(str(tiny_tokenizer_dir)).counter
    texts = [page.data.decode("utf-8", "replace") for page in PAGES]
    expected = [len(reference.encode(text, add_special_tokens=False)) for text in texts]
    assert counter.count_many(texts) == expected
    assert [counter.count(text) for text in texts] == expected
    assert len(set(expected)) == len(expected) and min(expected) > 100


ASSORTED = [
    "",
    " ",
    "hello\n\n  hello",
    "<|begin_of_text|>hello<|eot_id|>",  # special tokens in page text count as one each
    "東京タワー 🚀 ∑",
    "Welcher Torhüter stand beim CHL-Halbfinale 2022 im Tor?",
    *[page.data.decode("utf-8", "replace") for page in PAGES],
]


def auto_tokenizer_counts(folder: Path, texts: list[str]) -> list[int]:
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(folder)
    return [len(reference.encode(text, add_special_tokens=False)) for text in texts]


def with_config(folder: Path, copy: Path, **settings: object) -> Path:
    """A copy of tokenizer ``folder`` whose tokenizer_config.json also holds ``settings``."""
    copy = Path(shutil.copytree(folder, copy))
    path = copy / "tokenizer_config.json"
    path.write_text(json.dumps(json.loads(path.read_text("utf-8")) | settings), "utf-8")
    return copy


def test_a_folder_transformers_reads_as_saved_is_counted_without_transformers(
    tiny_tokenizer_dir, tmp_path
):
    from tokenizers import Tokenizer

    # split_special_tokens: "<|eot_id|>" in a page is its characters, not the special token.
    split = with_config(tiny_tokenizer_dir, tmp_path / "split", split_special_tokens=True)
    for folder in (tiny_tokenizer_dir, hand_made_tokenizer(tmp_path / "hand"), split):
        counter = load_token_counter(str(folder)).counter
        assert isinstance(counter, HFTokenCounter) and isinstance(counter.tokenizer, Tokenizer)
        expected = auto_tokenizer_counts(folder, ASSORTED)
        assert counter.count_many(ASSORTED) == expected
        assert [counter.count(text) for text in ASSORTED] == expected


def test_a_hub_tokenizer_in_the_cache_is_counted_without_transformers(
    tiny_tokenizer_dir, tmp_path, monkeypatch
):
    """The core install has no transformers: Llama-3's tokenizer pulled into the Hugging Face
    cache still counts exactly, with ``tokenizers`` alone."""
    from huggingface_hub import constants
    from tokenizers import Tokenizer

    repo = tmp_path / "models--someone--tokenizer"
    shutil.copytree(tiny_tokenizer_dir, repo / "snapshots" / "0123abcd")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd", encoding="utf-8")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    loaded = load_token_counter("someone/tokenizer")
    assert loaded.notice is None and isinstance(loaded.counter.tokenizer, Tokenizer)
    assert loaded.counter.count_many(ASSORTED) == auto_tokenizer_counts(
        tiny_tokenizer_dir, ASSORTED
    )


def test_a_config_that_changes_the_tokenizer_takes_transformers(tiny_tokenizer_dir, tmp_path):
    from tokenizers import Tokenizer

    # A special token that tokenizer.json lacks: transformers adds it.
    folder = with_config(tiny_tokenizer_dir, tmp_path / "tokenizer", extra_special_tokens=["<|x|>"])
    counter = load_token_counter(str(folder)).counter
    assert isinstance(counter, HFTokenCounter) and not isinstance(counter.tokenizer, Tokenizer)
    texts = [*ASSORTED, "hello <|x|> hello"]
    assert counter.count_many(texts) == auto_tokenizer_counts(folder, texts)


def test_unavailable_tokenizer_falls_back_fast_with_a_notice(monkeypatch):
    """Fast by construction, not by a clock: the fallback neither imports transformers or
    torch (seconds) nor opens a socket (a timeout)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for heavy in ("transformers", "torch"):
        monkeypatch.setitem(sys.modules, heavy, None)  # importing it now raises ImportError

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("the fallback used the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    loaded = load_token_counter("meta-llama/Llama-3.1-8B-Instruct")
    assert isinstance(loaded.counter, ApproxTokenCounter) and not loaded.counter.exact
    assert "approximation" in loaded.notice and "meta-llama/Llama-3.1-8B-Instruct" in loaded.notice
    assert "the hub is unreachable" in loaded.notice  # not a missing extra


def test_approx_can_be_asked_for_without_a_notice():
    loaded = load_token_counter("approx")
    assert isinstance(loaded.counter, ApproxTokenCounter) and loaded.notice is None


def test_approximation_rules():
    counter = ApproxTokenCounter()
    assert counter.count("</p><p>") == 5  # "</", "p", "><", "p", ">"
    assert counter.count("internationalization") == 5  # 20 letters / 4
    assert counter.count("1234567") == 3  # digits in threes
    assert counter.count("東京タワー") == 5
