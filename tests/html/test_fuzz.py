"""Fuzzing the HTML core with real pages, mutated the way broken and hostile pages are.

Each example takes a page from ``tests/fixtures/pages`` (two sentinel paragraphs added at the
start and the end of its body, so that text outside any mutation is known), mutates it once
(truncation, duplication or deletion of a tag span, character references to every class of
code point, deep nesting of any tag, attribute floods, other encodings with and without a
BOM, charset labels a browser ignores in the page and from the transport, unclosed or
closed SVG and MathML) and runs decoding, cleaning, the block tree and BM25 pruning. It
asserts:

- no internal error: a page may only be refused as an input (``InputError``), and only a
  UTF-16 page without a BOM, which looks binary, ever is;
- the pruned result fits its token budget;
- the visible text outside the mutated span survives cleaning: every word of the cleaned
  original (or, where the mutation may garble what follows it, the sentinels before it).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.html.blocks import Document, build_block_tree, serialize
from htmlrag_chat.html.charsets import LABELS
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.html.decode import decode_html
from htmlrag_chat.html.dom import BLOCK_TAGS
from htmlrag_chat.html.prune import prune
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.pruning.pipeline import PageInput, clean_page
from htmlrag_chat.pruning.tokens import ApproxTokenCounter
from htmlrag_chat.scoring.bm25 import BM25Scorer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pages"
START, END = "zqxstartsentinel", "zqxendsentinel"
DEEP, FLOODED, SECRET, REFERENCED = "zqxdeepword", "zqxfloodword", "zqxsecretword", "zqxrefword"
FOREIGN, DRAWN = "zqxforeignword", "zqxdrawnword"

# Every element of HTML, and a few that are not.
TAGS = """
a abbr address area article aside audio b base bdi bdo big blockquote body br button canvas
caption center cite code col colgroup data datalist dd del details dfn dialog div dl dt em
embed fieldset figcaption figure font footer form frame frameset h1 h2 h3 h4 h5 h6 head header
hgroup hr html i iframe img input ins kbd label legend li link main map mark math menu meta
meter nav nobr noembed noframes noscript object ol optgroup option output p param picture pre
progress q rp rt ruby s samp script search section select slot small source span strike strong
style sub summary sup svg table tbody td template textarea tfoot th thead time title tr track
tt u ul var video wbr xmp plaintext listing marquee blink custom-element x
""".split()
# Nested as deep as you like, these still show the text inside them.
SHOWN_WHEN_NESTED = "div span ul li table td b i section article blockquote font center".split()
ENCODINGS = ["utf-8", "utf-8-sig", "utf-16-le", "utf-16-be", "utf-16-le-nobom", "cp1252",
             "shift_jis", "gb18030", "koi8-r", "iso-8859-7"]  # fmt: skip

# A tokenizer of this test's own, to cut pages at real tags only: comments and raw-text
# elements are single tokens, then start and end tags.
TOKENS = re.compile(
    rb"<!--.*?(?:-->|\Z)|<(script|style|textarea|title)\b[^>]*>.*?(?:</\1\s*>|\Z)"
    rb"|<(/?)([A-Za-z][^\s/>]*)[^>]*>",
    re.S | re.I,
)
VOID = {b"area", b"base", b"br", b"col", b"embed", b"hr", b"img", b"input", b"link", b"meta",
        b"param", b"source", b"track", b"wbr"}  # fmt: skip


def with_sentinels(data: bytes) -> bytes:
    body = re.search(rb"<body[^>]*>", data, re.I)
    assert body is not None
    close = data.lower().rfind(b"</body")
    return (
        data[: body.end()] + f"<p>{START}</p>".encode() + data[body.end() : close]
        + f"<p>{END}</p>".encode() + data[close:]
    )  # fmt: skip


@dataclass(frozen=True)
class Page:
    name: str
    data: bytes  # UTF-8, with the sentinels
    words: Counter[str]  # of the cleaned page

    @property
    def start_end(self) -> int:
        """Where the start sentinel's paragraph ends."""
        return self.data.index(START.encode()) + len(START) + len(b"</p>")

    @property
    def body(self) -> tuple[int, int]:
        """The bytes between the two sentinel paragraphs."""
        return self.start_end, self.data.index(f"<p>{END}".encode())


def load(path: Path) -> Page:
    data = with_sentinels(decode_html(path.read_bytes()).utf8)
    return Page(path.name, data, Counter(visible_text(clean_html(data)).split()))


PAGES = [load(path) for path in sorted(FIXTURES.glob("*.html"))]


@dataclass(frozen=True)
class Mutated:
    data: bytes
    charset: str | None = None
    keeps: str = "all"  # every word of the original, "sentinels", "start" (START) or "none"
    shown: tuple[str, ...] = ()  # words of the mutation that must be visible
    hidden: tuple[str, ...] = ()  # words of the mutation that must not
    may_refuse: bool = False  # looks binary: InputError is the right answer


def tag_spans(page: Page) -> list[tuple[int, int]]:
    """(start, end) of real elements between the sentinels, start tag to matching end tag."""
    first, last = page.body
    tokens = list(TOKENS.finditer(page.data, first, last))
    spans = []
    for index, token in enumerate(tokens):
        name = (token.group(3) or b"").lower()
        if token.group(2) or not name or name in VOID:
            continue
        depth = 0
        for later in tokens[index:]:
            later_name = (later.group(3) or b"").lower()
            if later_name == name:
                depth += -1 if later.group(2) else 1
                if depth == 0:
                    spans.append((token.start(), later.end()))
                    break
    return spans


@st.composite
def truncated(draw, page: Page) -> Mutated:
    cut = draw(st.integers(0, len(page.data)))
    return Mutated(page.data[:cut], keeps="start" if cut >= page.start_end else "none")


def keeps_words(data: bytes, start: int) -> str:
    """What text a change of the span starting at ``start`` leaves as it was: an element
    shown on lines of its own holds whole words, so all words outside it; an inline one may
    be part of a word (``setup<span>(</span>name``), so only the sentinels are sure."""
    name = re.match(rb"<([^\s/>]+)", data[start:]).group(1).decode("ascii", "replace").lower()
    return "all" if name in BLOCK_TAGS else "sentinels"


@st.composite
def span_duplicated(draw, page: Page) -> Mutated:
    start, end = draw(st.sampled_from(tag_spans(page)))
    return Mutated(
        page.data[:end] + page.data[start:end] + page.data[end:],
        keeps=keeps_words(page.data, start),
    )


@st.composite
def span_deleted(draw, page: Page) -> Mutated:
    start, end = draw(st.sampled_from(tag_spans(page)))
    return Mutated(page.data[:start] + page.data[end:], keeps="sentinels")


CODE_POINTS = st.one_of(
    st.integers(0, 0x1F),  # C0 controls
    st.integers(0x7F, 0x9F),  # DEL and C1
    st.integers(0xD800, 0xDFFF),  # surrogates
    st.sampled_from([0, 0xFFFE, 0xFFFF, 0xFDD0, 0x1FFFE, 0x10FFFF, 0x110000, 10**12]),
    st.sampled_from([0x202E, 0x2066, 0x200B, 0xFEFF, 0xE0041]),  # invisible formatting
    st.integers(0x20, 0x7E),  # ASCII, "<" and "&" included
    st.integers(0xE000, 0xF8FF),  # private use
    st.integers(0x3040, 0x9FFF),  # kana and CJK
    st.integers(0x1F300, 0x1FAFF),  # emoji
)
REFERENCE_FORMS = ["&#{};", "&#x{:x};", "&#X{:X};", "&#{}", "&#x{:x}", "&#000{};", "&#x000{:x}"]


@st.composite
def character_references(draw, page: Page) -> Mutated:
    """References in the title, in a paragraph and in attribute values."""
    refs = [
        draw(st.sampled_from(REFERENCE_FORMS)).format(draw(CODE_POINTS))
        for _ in range(draw(st.integers(1, 6)))
    ]
    text = " ".join(refs).encode()
    data = page.data
    title = re.search(rb"<title[^>]*>", data, re.I)
    if title is not None:
        data = data[: title.end()] + text + b" " + data[title.end() :]
    at = data.index(START.encode()) + len(START) + len(b"</p>")
    paragraph = f'<p title="{refs[0]}">{REFERENCED} '.encode() + text + b" </p>"
    data = data[:at] + paragraph + data[at:]
    return Mutated(data, shown=(REFERENCED,))


@st.composite
def deep_nesting(draw, page: Page) -> Mutated:
    tag = draw(st.sampled_from(TAGS))
    depth = draw(st.one_of(st.integers(1, 3000), st.sampled_from([700, 2047, 2049, 3000])))
    nest = f"<{tag}>" * depth + f" {DEEP} " + f"</{tag}>" * depth
    at = page.start_end
    return Mutated(
        page.data[:at] + nest.encode() + page.data[at:],
        keeps="start" if tag == "plaintext" else "all",  # plaintext never ends
        shown=(DEEP,) if tag in SHOWN_WHEN_NESTED else (),
    )


@st.composite
def attribute_flood(draw, page: Page) -> Mutated:
    """Thousands of attributes on a new element (maybe hidden by its last one) and on a
    real start tag of the page."""
    count = draw(st.one_of(st.integers(65, 30_000), st.sampled_from([30_000, 100_000])))
    form = draw(st.sampled_from(["a{}", 'a{}="x"', "a{}='<>'", "a{}=v/", "a", 'a{}=">"']))
    flood = " ".join(form.format(i) for i in range(count))
    hidden = draw(st.booleans())
    element = f"<div {flood}{' hidden' if hidden else ''}>{SECRET if hidden else FLOODED}</div>"
    data = page.data[: page.start_end] + element.encode() + page.data[page.start_end :]
    spans = tag_spans(page)
    if spans:
        start, _ = draw(st.sampled_from(spans))
        start += len(element)
        name_end = re.compile(rb"<[^\s/>]+").match(data, start).end()
        data = data[:name_end] + b" " + flood.encode() + b" " + data[name_end:]
    return Mutated(data, shown=() if hidden else (FLOODED,), hidden=(SECRET,))


@st.composite
def encoded(draw, page: Page) -> Mutated:
    """The page in another encoding, with or without a BOM, with or without the right
    charset from the transport (the page's own <meta> still says UTF-8)."""
    text = page.data.decode("utf-8")
    encoding = draw(st.sampled_from(ENCODINGS))
    codec = encoding.removesuffix("-nobom")
    data = text.encode(codec, "xmlcharrefreplace")
    bom = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}
    if encoding in bom:
        data = bom[encoding] + data
    label = draw(st.sampled_from([None, codec, "utf-8", "x-unknown-label"]))
    if label == "x-unknown-label":  # an unusable label from a server is dropped by the fetcher
        label = None
    # Without a BOM or the right label, the charset is detected, and a wrong guess garbles
    # text (a double-byte codec even swallows the ASCII byte after a high one): only the
    # start sentinel, right after <body>, is sure to read the same.
    exact = encoding in ("utf-8", "utf-8-sig", "utf-16-le", "utf-16-be") or label == codec
    return Mutated(data, label, keeps="all" if exact else "start", may_refuse="nobom" in encoding)


# Names Python's codecs know that no browser honours (transforms, escapes, EBCDIC, UTF-7,
# UTF-32), WHATWG's that decode as nothing (replacement, x-user-defined), and nonsense.
IGNORED_LABELS = """
rot13 rot_13 base64 base_64 hex zlib bz2 uu quopri undefined idna punycode unicode_escape
raw_unicode_escape utf-7 utf_7 utf-32 utf-32le utf-32be cp037 cp500 cp1140 palmos mbcs
x-user-defined replacement iso-2022-kr hz-gb-2312 string_escape x-klingon utf-8-sig utf8
""".split()
# Bytes that break a page decoded with some of those labels.
POISONS = ["+ADw-script+AD4-", "+2AA-", "\\ud800", "\\x9b", "=C2=9B", "%"]


@st.composite
def charset_label(draw, page: Page) -> Mutated:
    """A charset label in a <meta> at the very start of the page and/or from the transport:
    one a browser ignores (the UTF-8 page must then read as it is), one that says UTF-16 in
    the page (which means UTF-8) or from the transport (not believed without NULs), or
    another real one (the ASCII start sentinel must survive)."""
    ignored = st.sampled_from([*IGNORED_LABELS, "utf-16", "utf-16le", "UTF-16BE", "unicode"])
    made_up = st.from_regex(r"[A-Za-z0-9_.:\-]{1,12}", fullmatch=True)
    label = draw(st.one_of(ignored, st.sampled_from(sorted(LABELS)), made_up))
    in_meta, from_transport = draw(st.sampled_from([(True, False), (False, True), (True, True)]))
    poison = draw(st.sampled_from(POISONS)).encode()
    meta = f'<meta charset="{label}">'.encode("utf-8", "replace") if in_meta else b""
    at = page.start_end
    data = meta + page.data[:at] + b"<p>" + poison + b"</p>" + page.data[at:]
    used = LABELS.get(label.strip(" \t\n\f\r\"'").lower())
    keeps = "all" if used in (None, "utf-8", "utf-16-le", "utf-16-be") else "start"
    return Mutated(data, label if from_transport else None, keeps=keeps)


@st.composite
def foreign_content(draw, page: Page) -> Mutated:
    """SVG or MathML after the start sentinel: unclosed (what follows must come back at
    HTML's next paragraph or block, the end sentinel among them), or closed around a
    <foreignObject> whose HTML is shown."""
    kind = draw(st.sampled_from(["svg", "math", "SVG"]))
    closed = draw(st.booleans())
    drawing = f'<{kind} viewBox="0 0 9 9"><path d="M0 0"/><g><text>{DRAWN}</text>'
    if kind != "math" and draw(st.booleans()):
        drawing += f"<foreignObject><div><p>{FOREIGN}</p></div></foreignObject>"
        shown: tuple[str, ...] = (FOREIGN,)
    else:
        shown = ()
    drawing += f"</g></{kind}>" if closed else draw(st.sampled_from(["", "<g>", "<mi>x"]))
    at = page.start_end
    data = page.data[:at] + drawing.encode() + page.data[at:]
    return Mutated(data, keeps="all" if closed else "sentinels", shown=shown, hidden=(DRAWN,))


MUTATIONS = [truncated, span_duplicated, span_deleted, character_references, deep_nesting,
             attribute_flood, encoded, charset_label, foreign_content]  # fmt: skip


def check(page: Page, mutated: Mutated, budget: int, max_words: int) -> None:
    try:
        source, html = clean_page(PageInput(page.name, mutated.data, mutated.charset))
    except InputError:
        assert mutated.may_refuse, "a readable page was refused"
        return
    serialize(html)
    words = Counter(visible_text(html).split())
    if mutated.keeps == "all":
        assert not page.words - words, f"lost: {sorted(page.words - words)[:10]}"
    elif mutated.keeps == "sentinels":
        assert words[START] and words[END]
    elif mutated.keeps == "start":
        assert words[START]
    assert all(words[word] for word in mutated.shown)
    assert not any(words[word] for word in mutated.hidden)

    document = Document.from_pages([(source, html)])
    tree = build_block_tree(document, max_words)
    counter = ApproxTokenCounter()
    result = prune(tree, BM25Scorer().score("sentinel deep word", tree), budget, counter)
    assert counter.count(result.document.to_html()) == result.tokens_after <= budget


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data(), st.integers(1, 2000), st.integers(1, 256))
def test_mutated_real_pages_clean_prune_and_keep_the_text_around_the_mutation(
    data: st.DataObject, budget: int, max_words: int
) -> None:
    page = data.draw(st.sampled_from(PAGES), label="page")
    mutation = data.draw(st.sampled_from(MUTATIONS), label="mutation")
    check(page, data.draw(mutation(page), label="mutated"), budget, max_words)
