"""What a question asks for, by its question words: a number, a date or a name.

The extractive reader ranks passages by the question's words, and in a table every row
shares them through its header: "How much did the courgettes weigh?" matches the row of
courgettes and the header "Vegetable | Weight", but only a passage with a number in it
answers. So a passage that holds what the question asks for (a number the question does
not give, a capitalised name it does not name) ranks above one that only repeats the
question. Questions come in the languages of the pages, so the words are listed for those
(the corpus: German, English, Spanish, French, Polish, Portuguese, Italian, Finnish,
Hungarian, Japanese) and a few more; "when" asks for a date, which is written with digits
on the pages here ("9 August", "24.01.2022", "2014"), so it asks for a number too.
"""

from __future__ import annotations

import re

NUMBER, NAME = "number", "name"

# Whole words and phrases, and (``_QUANTITY_STEMS``) the starts of words that take endings
# ("cuánt" for cuánto, cuántas...; "wie viel" for wie viele, wie vielen).
_QUANTITY_WORDS = (
    r"how (?:much|many|long|far|high|tall|old|big|large|heavy|often|fast)",
    r"what (?:price|percentage|share|year|date|time)",
    r"which (?:year|date)",
    r"when",
    r"wie (?:hoch|lange?|weit|alt|groß|gross|schwer|oft|teuer|schnell)",
    r"wann",
    r"welche[mn]? (?:jahr|tag|datum)",
    r"cuándo",
    r"cuando",
    r"en qué (?:año|fecha)",
    r"combien",
    r"quand",
    r"en quelle année",
    r"quando",
    r"ile",
    r"ilu",
    r"kiedy",
    r"jak (?:długo|wysoko|daleko)",
    r"w którym roku",
    r"hoeveel",
    r"wanneer",
    r"mikor",
    r"kuinka",
    r"montako",
    r"paljonko",
    r"milloin",
    r"сколько",
    r"когда",
    r"hur (?:många|mycket|länge)",
    r"när",
    r"hvor (?:mange|meget|mye|længe|lenge)",
)
_QUANTITY_STEMS = (r"wie ?viel", r"cu[aá]nt", r"quant", r"hány", r"mennyi")
# Asking "who" opens the question (after a preposition at most): "qui", "chi", "ki" and
# "wie" are also relative pronouns or other words later in a sentence.
_PERSON = (
    "who",
    "whom",
    "whose",
    "wer",
    "wem",
    "wen",
    "wessen",
    "quién",
    "quien",
    "quiénes",
    "qui",
    "chi",
    "quem",
    "kto",
    "kogo",
    "komu",
    "kim",
    "ki",
    "kik",
    "kit",
    "kuka",
    "ketkä",
    "кто",
    "vem",
    "hvem",
)
_CJK_QUANTITY = (
    "多少", "几", "幾", "いくつ", "いくら", "何人", "何年", "何日", "いつ", "什么时候", "何時",
)  # fmt: skip
_CJK_PERSON = ("谁", "誰", "だれ")
_QUANTITY_RE = re.compile(
    rf"(?<!\w)(?:(?:{'|'.join(_QUANTITY_WORDS)})(?!\w)|(?:{'|'.join(_QUANTITY_STEMS)}))",
    re.IGNORECASE,
)
_OPENING = re.compile(r"[^\W\d_]+")
_PREPOSITIONS = frozenset("to of for with by from an von mit für a de con por à di da z od".split())


def asked_for(question: str) -> str:
    """``NUMBER`` for a question that asks how much, how many or when; ``NAME`` for one
    that asks who; "" for any other (what, which, why...)."""
    if _QUANTITY_RE.search(question) or any(word in question for word in _CJK_QUANTITY):
        return NUMBER
    words = _OPENING.findall(question.casefold())[:2]
    if words and words[0] in _PREPOSITIONS:
        words = words[1:]
    if (words and words[0] in _PERSON) or any(word in question for word in _CJK_PERSON):
        return NAME
    return ""
