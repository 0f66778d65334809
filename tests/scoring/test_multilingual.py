"""Multilingual embeddings: a BERT with a multilingual vocabulary through the numpy encoder,
E5's prefixes, and the fused stage's rule that reads non-English questions with it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from htmlrag_chat.html.blocks import Document, Page, build_block_tree
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.scoring import MULTILINGUAL_EMBED_MODEL
from htmlrag_chat.scoring.bert import BertEncoder, read_layout
from htmlrag_chat.scoring.embed import (
    EmbeddingScorer,
    passage_prefix_for,
    query_instruction_for,
)
from htmlrag_chat.scoring.fused import FusedScorer
from tests.tiny_models import make_tiny_multilingual_bert, make_tiny_sentence_bert

TEXTS = [
    "Welcher Torhüter stand im Tor des EHC München?",
    "Der Torhüter",
    "der torhüter",
    "子どもへの体罰を禁止する法律",
    "Ile dni płatnego urlopu dostaną rodzice?",
    "Привет мир",
    "¿Cuántos miembros asistieron al pleno?",
]


@pytest.fixture(scope="module")
def multilingual(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_multilingual_bert(tmp_path_factory.mktemp("tiny-multilingual"))


@pytest.fixture(scope="module")
def english(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_sentence_bert(tmp_path_factory.mktemp("tiny-english"))


def test_the_numpy_encoder_reads_a_multilingual_bert_as_sentence_transformers_does(
    multilingual: Path,
):
    from sentence_transformers import SentenceTransformer

    layout = read_layout(multilingual)
    assert layout is not None
    ours = BertEncoder.load(layout).encode(TEXTS, batch_size=4, normalize_embeddings=True)
    reference = SentenceTransformer(str(multilingual), device="cpu").encode(TEXTS)
    np.testing.assert_allclose(ours, reference, atol=1e-5)
    # A cased vocabulary: "Der" and "der" are different tokens, so different vectors.
    assert not np.allclose(ours[1], ours[2])


def test_e5_models_get_their_query_and_passage_prefixes():
    assert query_instruction_for(MULTILINGUAL_EMBED_MODEL) == "query: "
    assert passage_prefix_for(MULTILINGUAL_EMBED_MODEL) == "passage: "
    assert passage_prefix_for("sentence-transformers/all-MiniLM-L6-v2") == ""
    assert query_instruction_for("org/e5-like-but/not") == ""


def tree():
    html = (
        "<body><p>Der Torhüter des EHC war Henrik Haukeland.</p>"
        "<p>The goalkeeper of the club was Henrik Haukeland.</p></body>"
    )
    return build_block_tree(Document.from_pages([(Page("p"), clean_html(html))]), 8)


@pytest.mark.parametrize(
    ("question", "reader"),
    [
        ("Welcher Torhüter stand im Tor des EHC?", "multilingual"),
        ("Which goalkeeper was in the goal of the club?", "english"),
        ("Haukeland", "english"),  # too short to tell: the default model
    ],
)
def test_fused_reads_a_non_english_question_with_the_multilingual_model(
    english: Path, multilingual: Path, question: str, reader: str
):
    models = {
        "english": EmbeddingScorer(str(english), device="cpu"),
        "multilingual": EmbeddingScorer(str(multilingual), device="cpu"),
    }
    first = FusedScorer(models["english"], multilingual=models["multilingual"])
    again = FusedScorer(models["english"], multilingual=models["multilingual"])
    assert first.score(question, tree()) == again.score(question, tree())  # deterministic
    assert {name: model.encoded > 0 for name, model in models.items()} == {
        name: name == reader for name in models
    }
    assert first.last_stats is not None and first.last_stats.encoded == 3  # 2 blocks, question
    assert again.last_stats is not None and again.last_stats.encoded == 0  # from the cache


def test_an_english_only_model_gives_no_opinion_on_other_languages(english: Path):
    model = EmbeddingScorer(str(english), device="cpu")
    fused = FusedScorer(model, english_only=True)
    german = fused.score("Welcher Torhüter stand im Tor des EHC?", tree())
    assert model.encoded == 0 and fused.last_stats is not None and fused.last_stats.encoded == 0
    assert german.index(max(german)) == 0  # BM25's order: the German block
    fused.score("Which goalkeeper was in the goal of the club?", tree())
    assert model.encoded == 3  # English: the model reads it
