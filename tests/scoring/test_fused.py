"""The fused first stage: BM25 over every block, the embedding model over the best of them,
ranks fused; with the real bundled all-MiniLM-L6-v2."""

from __future__ import annotations

from htmlrag_chat.html.blocks import Document, Page, build_block_tree
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.html.prune import DISCARD
from htmlrag_chat.scoring.embed import EmbeddingScorer, MemoryEmbeddingCache
from htmlrag_chat.scoring.fused import (
    CLAIM_PLACES,
    ESCAPE_PLACES,
    FusedScorer,
    boilerplate,
    claimed,
    final_scores,
    fuse,
    own_matches,
    ranking,
    ranks,
)


def test_ranking_puts_ties_in_document_order():
    assert ranking([1.0, 3.0, 3.0, 0.5]) == [1, 2, 0, 3]


def test_candidates_come_first_in_fused_order_and_the_rest_follow():
    lexical = ranks([5.0, 4.0, 3.0, 2.0, 1.0])
    chosen = [0, 1, 2]
    scores = fuse(lexical, chosen, [0.1, 0.2, 0.9])  # the embedding prefers block 2
    order = ranking(scores)
    assert set(order[:3]) == {0, 1, 2} and order[3:] == [3, 4]
    assert order.index(2) < order.index(1)  # lifted over block 1 by the embedding


def test_main_content_outranks_an_equal_match_outside_it():
    lexical = ranks([3.0, 2.0, 1.0])
    evidence = fuse(lexical, [0, 1, 2], [0.9, 0.8, 0.7])
    order = ranking(final_scores(evidence, [False, True, True], []))
    assert ranking(evidence)[0] == 0
    assert order[0] == 1 and order.index(0) > 0  # the menu's best match no longer wins


def test_boilerplate_goes_unless_both_rankings_vouch_for_it():
    blocks = 2 * ESCAPE_PLACES
    pages = [0] * blocks
    content = [index % 2 == 0 for index in range(blocks)]  # odd blocks: menus and footers
    evidence = [float(blocks - index) for index in range(blocks)]  # earlier is better
    own = [0.0] * blocks
    own[1] = 3.0  # its own words match, and the fused evidence ranks it second: it stays
    own[blocks - 1] = 5.0  # its own words match best, but the fused evidence ranks it last
    discard = boilerplate(pages, content, evidence, own)
    assert discard == list(range(3, blocks, 2))
    scores = final_scores(evidence, content, discard)
    assert [scores[index] for index in discard] == [DISCARD] * len(discard)
    assert scores[1] == evidence[1]


def test_a_page_where_no_main_text_was_found_keeps_its_blocks():
    pages = [0, 0, 1, 1]
    content = [True, False, False, False]  # trafilatura found nothing on page 1
    assert boilerplate(pages, content, [4.0, 3.0, 2.0, 1.0], [0.0] * 4) == [1]


def tree():
    paragraphs = [
        "The committee approved the annual budget after a long debate.",
        "Our feline companion sleeps on the sofa all afternoon.",  # a cat, in other words
        "Cat food prices rose in the spring.",
        *[f"Unrelated filler paragraph number {n} about trains and stations." for n in range(40)],
    ]
    body = "".join(f"<p>{text}</p>" for text in paragraphs)
    html = clean_html(f"<html><head><title>Notes</title></head><body>{body}</body></html>")
    return build_block_tree(Document.from_pages([(Page("p", "Notes"), html)]), 16)


def test_the_embedding_reads_only_the_candidates_and_the_scores_repeat():
    blocks = tree()
    embedder = EmbeddingScorer(cache=MemoryEmbeddingCache())
    scorer = FusedScorer(embedder, candidates=8)
    first = scorer.score("where does the cat sleep", blocks)
    stats = scorer.last_stats
    assert stats is not None
    assert (stats.blocks, stats.candidates) == (len(blocks.blocks), 8)
    assert stats.encoded == 9  # the candidates and the question
    again = scorer.score("where does the cat sleep", blocks)
    assert again == first  # deterministic, and now entirely from the cache
    assert scorer.last_stats.encoded == 0
    # The paragraph that says "cat" in other words is a candidate and ranks near the top.
    top = [blocks.blocks[index].text for index in ranking(first)[:2]]
    assert any("feline" in text for text in top)


def test_without_an_embedding_model_bm25_and_main_text_decide():
    """The core install without the embedding model: no candidates, nothing embedded, the
    lexical order kept (the paragraph that says "cat" in other words is not lifted)."""
    blocks = tree()
    scorer = FusedScorer(None)
    scores = scorer.score("where does the cat sleep", blocks)
    assert scorer.last_stats is not None
    assert (scorer.last_stats.candidates, scorer.last_stats.encoded) == (0, 0)
    best = blocks.blocks[ranking(scores)[0]].text
    assert best.startswith("Cat food")
    assert scores == scorer.score("where does the cat sleep", blocks)


def test_a_block_outside_the_main_text_is_claimed_when_it_answers_beyond_the_title():
    blocks = 3 * ESCAPE_PLACES
    pages = [0] * blocks
    content = [index == 0 for index in range(blocks)]  # trafilatura found block 0 alone
    evidence = [float(blocks - index) for index in range(blocks)]  # earlier is better
    own = [0.0] * blocks
    beyond = [0.0] * blocks
    own[CLAIM_PLACES - 1] = beyond[CLAIM_PLACES - 1] = 5.0  # the ingredient list
    own[1] = 6.0  # "More about <title>": its words are the title's
    own[CLAIM_PLACES] = beyond[CLAIM_PLACES] = 7.0  # matches, but the fused evidence disagrees
    claims = claimed(content, pages, evidence, own, beyond)
    assert [index for index, claim in enumerate(claims) if claim] == [0, CLAIM_PLACES - 1]
    nothing = [False] * blocks  # a page without a main text keeps its blocks anyway
    assert claimed(nothing, pages, evidence, own, beyond) == nothing


def recipe_page():
    article = "".join(
        f"<p>Paragraph {n} tells how the family bakes spooky biscuits every autumn, the"
        " children shaping the dough and laughing about it for hours on end.</p>"
        for n in range(8)
    )
    ingredients = "".join(f"<li>{line}</li>" for line in ("225 g butter", "150 g fine sugar"))
    links = "".join(f"<li><a href='/{n}'>Spooky finger biscuits {n}</a></li>" for n in range(4))
    title = "Spooky finger biscuits"
    html = clean_html(
        f"<html><head><title>{title}</title></head><body><nav><a href='/'>Home</a></nav>"
        f"<article><h1>{title}</h1>{article}</article>"
        f"<aside><h3>Ingredients</h3><ul>{ingredients}</ul></aside>"
        f"<div><h3>More</h3><ul>{links}</ul></div></body></html>"
    )
    return build_block_tree(Document.from_pages([(Page("p", title), html)]), 16)


def test_own_matches_tell_the_question_words_a_block_has_beyond_its_page_title():
    blocks = recipe_page()
    own, beyond = own_matches("How much fine sugar do the spooky finger biscuits need?", blocks)
    texts = [block.text for block in blocks.blocks]
    sugar = next(index for index, text in enumerate(texts) if "fine sugar" in text)
    link = texts.index("Spooky finger biscuits 0")
    assert beyond[sugar] == own[sugar] > 0  # "fine", "sugar": none of them in the title
    assert own[link] > 0 and beyond[link] == 0.0  # it only repeats the title
    # Asked with the title itself (as retention asks), nothing is beyond it.
    assert own_matches("Spooky finger biscuits", blocks)[1] == [0.0] * len(texts)
