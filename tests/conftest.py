"""Shared fixtures: real pages from the corpus, and a tiny tokenizer and LM made on the spot.

The tokenizer is a real byte-level BPE with a Llama-3-style chat template, and the LM a real
Llama with random weights (hidden size 64, two layers); both are saved in Hugging Face format
and loaded through the same code paths as hub models, with no download.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"

# Tests never reach the network: a model id that is not a local path fails fast.
os.environ["HF_HUB_OFFLINE"] = "1"

SPECIAL_TOKENS = ["<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>"]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|start_header_id|>{{ message['role'] }}"
    "<|end_header_id|>\n\n{{ message['content'] }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)


@dataclass(frozen=True)
class FixturePage:
    name: str
    path: Path
    data: bytes
    with_snippets: list[str]
    without_snippets: list[str]
    question: str | None


def _load_pages() -> list[FixturePage]:
    pages = []
    for line in (FIXTURES / "pages.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        path = FIXTURES / item["file"]
        pages.append(
            FixturePage(
                name=path.stem,
                path=path,
                data=path.read_bytes(),
                with_snippets=item["with"],
                without_snippets=item["without"],
                question=item.get("question"),
            )
        )
    return pages


PAGES = _load_pages()


@pytest.fixture(params=PAGES, ids=[page.name for page in PAGES])
def fixture_page(request: pytest.FixtureRequest) -> FixturePage:
    return request.param


@pytest.fixture(scope="session")
def tiny_tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 600-token byte-level BPE trained on the fixture pages, saved as a HF tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    texts = [page.data.decode("utf-8", "replace") for page in PAGES]
    tokenizer.train_from_iterator(texts, trainer)
    folder = tmp_path_factory.mktemp("tiny-tokenizer")
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>"
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)
    return folder


def make_tiny_lm(folder: Path, tokenizer_dir: Path, max_positions: int = 8192) -> Path:
    """A random-weight Llama for the tiny tokenizer, saved with it into ``folder``."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_lm_dir(tmp_path_factory: pytest.TempPathFactory, tiny_tokenizer_dir: Path) -> Path:
    return make_tiny_lm(tmp_path_factory.mktemp("tiny-llama"), tiny_tokenizer_dir)


@pytest.fixture(scope="session")
def tiny_counter(tiny_tokenizer_dir: Path):
    from htmlrag_chat.tokens import load_token_counter

    loaded = load_token_counter(str(tiny_tokenizer_dir))
    assert loaded.notice is None
    return loaded.counter
