"""Tiny real models for tests and benchmarks, built locally in about a second.

A byte-level BPE tokenizer with a Llama-3-style chat template, and a Llama with random
weights (hidden size 64, two layers) for any tokenizer. Both are saved in Hugging Face
format so that they load through the same code as hub models, with no download.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

SPECIAL_TOKENS = ["<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>"]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|start_header_id|>{{ message['role'] }}"
    "<|end_header_id|>\n\n{{ message['content'] }}<|eot_id|>{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)


def make_tiny_tokenizer(folder: Path, texts: Iterable[str], vocab_size: int = 600) -> Path:
    """Train a byte-level BPE on ``texts`` and save it with a chat template into ``folder``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>"
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)
    return folder


def make_tiny_lm(
    folder: Path, tokenizer_dir: Path | str, max_positions: int = 8192, tied: bool = False
) -> Path:
    """A random-weight Llama for the tokenizer in ``tokenizer_dir``, saved with it.

    ``tied``: the output layer shares the input embeddings (as Llama-3.2-1B's does), so the
    checkpoint holds one of them and loading must tie the other."""
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
        tie_word_embeddings=tied,
    )
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


ENGLISH_LETTERS = "abcdefghijklmnopqrstuvwxyzäöüé0123456789.,!?"
ENGLISH_WORDS = ("the", "and", "hello", "world", "docker")
# Cased letters of the corpus languages, Cyrillic, kana and a few ideographs: the kind of
# vocabulary a multilingual model (mBERT, multilingual-e5) has, in miniature.
_CYRILLIC = "".join(map(chr, range(0x430, 0x450)))  # the Russian lowercase letters
MULTILINGUAL_LETTERS = (
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZäöüßÄÖÜéèêàâçñãõóíúąęłńśźżőű"
    f"{_CYRILLIC}子体罰禁止法律東京都のをがするできる0123456789.,!?¿"
)
MULTILINGUAL_WORDS = ("der", "die", "und", "el", "la", "los", "le", "les", "w", "nie", "the")


def make_tiny_sentence_bert(
    folder: Path,
    pooling: str = "mean",
    normalize: bool = True,
    max_seq_length: int = 24,
    letters: str = ENGLISH_LETTERS,
    words: Iterable[str] = ENGLISH_WORDS,
    lowercase: bool = True,
) -> Path:
    """A random-weight BERT (hidden size 32, two layers, LayerNorm eps 1e-7) with a WordPiece
    vocabulary of ``letters`` and a few ``words``, saved by sentence-transformers itself as
    Transformer + Pooling (+ Normalize)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    try:  # where sentence-transformers 6 keeps its modules; 3 to 5 in ``models``
        from sentence_transformers.sentence_transformer import modules
    except ImportError:
        from sentence_transformers import models as modules  # type: ignore[no-redef]

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *letters]
    vocab += [f"##{char}" for char in letters] + list(words)
    bert = folder / "bert"
    BertTokenizerFast(
        vocab={token: index for index, token in enumerate(vocab)},
        do_lower_case=lowercase,
        strip_accents=None if lowercase else False,
    ).save_pretrained(bert)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        layer_norm_eps=1e-7,
    )
    model = BertModel(config, add_pooling_layer=False)
    with torch.no_grad():  # away from the initial values: LayerNorm scales of 1, even attention
        for weight in model.parameters():
            weight.add_(torch.randn_like(weight) * 0.2)
    model.save_pretrained(bert)
    parts = [
        modules.Transformer(str(bert), max_seq_length=max_seq_length),
        modules.Pooling(config.hidden_size, pooling),
    ]
    if normalize:
        parts.append(modules.Normalize())
    SentenceTransformer(modules=parts, device="cpu").save(str(folder / "model"))
    return folder / "model"


def make_tiny_multilingual_bert(folder: Path) -> Path:
    """The tiny sentence BERT with a cased multilingual vocabulary (see
    ``MULTILINGUAL_LETTERS``), as multilingual-e5-small is a BERT with a multilingual one."""
    return make_tiny_sentence_bert(
        folder, letters=MULTILINGUAL_LETTERS, words=MULTILINGUAL_WORDS, lowercase=False
    )
