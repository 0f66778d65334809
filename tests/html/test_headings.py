"""Each block's context: its page title and the nearest heading before it on its page."""

from __future__ import annotations

from htmlrag_chat.html.blocks import Document, Page, build_block_tree, page_title
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.html.headings import heading_context


def two_pages() -> Document:
    first = clean_html(
        "<html><head><title>Rory McIlroy</title></head><body>"
        "<p>Intro paragraph before any heading.</p>"
        "<h2>Career</h2><p>He won it in 2011 and again later.</p>"
        "<h2>Personal life</h2><p>He lives in Florida.</p></body></html>"
    )
    second = clean_html(
        "<html><head><title>Golf</title></head><body><p>Second page text about clubs.</p>"
        "<p>Another paragraph about golf balls.</p></body></html>"
    )
    return Document.from_pages([(Page("a", page_title(first)), first), (Page("b", "Golf"), second)])


def context_of(text: str, document: Document | None = None, max_words: int = 8) -> str:
    """The context line of the one block of ``document`` (default ``two_pages``) that
    starts with ``text``."""
    tree = build_block_tree(document or two_pages(), max_words)
    (index,) = [i for i, block in enumerate(tree.blocks) if block.text.startswith(text)]
    return heading_context(tree)[index]


def test_a_block_gets_its_title_and_nearest_heading():
    assert context_of("He won it") == "Rory McIlroy - Career"
    assert context_of("He lives") == "Rory McIlroy - Personal life"


def test_before_any_heading_only_the_title():
    assert context_of("Intro paragraph") == "Rory McIlroy"


def test_headings_do_not_leak_into_the_next_page():
    assert context_of("Second page") == "Golf"


def test_a_heading_is_not_its_own_context():
    assert context_of("Personal life") == "Rory McIlroy - Career"


def structured() -> Document:
    html = clean_html(
        "<html><head><title>Tabelle</title></head><body><h2>Wahre Tabelle</h2><table>"
        "<tr><th>Rang</th><th>DFL</th><th>Wahr</th></tr>"
        "<tr><td>8.</td><td>Freiburg (14 Pkt)</td><td>Gladbach (12 Pkt)</td></tr></table>"
        "<p>Según el sitio, las marcas son las siguientes:</p>"
        "<ul><li>Huawei (excepto el Nexus 6P)</li><li>Samsung<ul><li>Galaxy S9</li></ul></li></ul>"
        "<ol><li>First step of nothing</li></ol></body></html>"
    )
    return Document.from_pages([(Page("s", "Tabelle"), html)])


def structured_context(text: str) -> str:
    return context_of(text, structured(), 2)


def test_a_table_row_is_read_with_its_header_row():
    assert structured_context("8.") == "Tabelle - Wahre Tabelle - Rang | DFL | Wahr"
    assert structured_context("Rang") == "Tabelle - Wahre Tabelle"  # the header itself


def test_a_list_item_is_read_with_its_lead_in():
    lead = "Según el sitio, las marcas son las siguientes:"
    assert structured_context("Huawei") == f"Tabelle - Wahre Tabelle - {lead}"
    assert structured_context("Galaxy") == "Tabelle - Wahre Tabelle - Samsung"
    assert structured_context("First step") == "Tabelle - Wahre Tabelle"  # after a list: none


def split_tables(tables: str) -> Document:
    """A page whose table is written as a run of tables, as result generators do."""
    html = clean_html(f"<html><head><title>T</title></head><body>{tables}</body></html>")
    return Document.from_pages([(Page("s", "T"), html)])


def one_row(*cells: str, tag: str = "td") -> str:
    row = "".join(f"<{tag}>{cell}</{tag}>" for cell in cells)
    return f"<table><tr>{row}</tr></table>"


def test_a_run_of_one_row_tables_is_one_table_under_its_header():
    header = one_row("Domaine", "Articles", "Auteurs", tag="th")
    document = split_tables(
        header + one_row("Droit", "91", "166") + "\n" + one_row("Finance", "167", "345")
    )
    assert context_of("Finance", document, 2) == "T - Domaine | Articles | Auteurs"
    assert context_of("Droit", document, 2) == "T - Domaine | Articles | Auteurs"


def test_without_a_header_row_the_run_starts_with_its_label():
    document = split_tables(
        "<h3>Schülerinnen A</h3>"
        + one_row("4 x 100 m Staffel", "19.05.2007")
        + one_row("1.", "TS Göppingen I", "50,59 sec.")
        + "<p>Between</p>"
        + one_row("1.", "LSG Aalen I", "55,75 sec.")
    )
    label = "4 x 100 m Staffel | 19.05.2007"
    assert context_of("TS Göppingen", document, 2) == f"T - Schülerinnen A - {label}"
    assert context_of("LSG Aalen", document, 2) == "T - Schülerinnen A"  # the run ended


def test_the_nearest_header_of_a_run_labels_the_rows_after_it():
    document = split_tables(
        one_row("Men", tag="th")
        + one_row("Lindvik", "243.8")
        + one_row("Women", tag="th")
        + one_row("Kriznar", "131.6")
    )
    assert context_of("Lindvik", document, 2) == "T - Men"
    assert context_of("Kriznar", document, 2) == "T - Women"


def test_a_long_header_row_is_cut_between_words_a_long_first_row_dropped():
    cells = [f"Nombre d'articles signés {n}" for n in range(12)]
    labelled = split_tables(
        "<table><tr>"
        + "".join(f"<th>{cell}</th>" for cell in cells)
        + "</tr><tr><td>Finance</td></tr></table>"
    )
    context = context_of("Finance", labelled, 2)
    assert context.startswith("T - Nombre d'articles signés 0 | Nombre")
    assert len(context) <= len("T - ") + 200 and not context.endswith(" ")
    unlabelled = split_tables(
        "<table><tr>"
        + "".join(f"<td>{cell}</td>" for cell in cells)
        + "</tr><tr><td>Finance</td></tr></table>"
    )
    assert context_of("Finance", unlabelled, 2) == "T"


def test_a_list_that_opens_its_wrapper_is_led_in_by_what_comes_before_the_wrapper():
    document = split_tables(
        "<div><button>Whatsapp Radio Bío Bío</button><b-modal><ul>"
        "<li>RBB Santiago +56 9 9200 7888</li><li>RBB Temuco +56 4 5259 2200</li>"
        "</ul></b-modal></div><p>Then a paragraph of other words.</p>"
        "<div>Ingredients:<ul><li>350 g flour</li><li>150 g fine sugar</li></ul></div>"
    )
    assert context_of("RBB Temuco", document, 4) == "T - Whatsapp Radio Bío Bío"
    assert context_of("350 g", document, 4) == "T - Ingredients:"  # loose text before it
