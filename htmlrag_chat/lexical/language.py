"""Which language a text is in, cheaply enough to ask of every block of ten pages.

Lexical scoring stems words, and a stemmer is per language. Pages and questions come in any
language (the corpus: German, English, Spanish, French, Polish, Portuguese, Italian,
Finnish, Hungarian, Japanese), and a block of a German page can be an English quote. A
detector library reads letter n-grams (langdetect, lingua: tens of milliseconds and a large
model load for ten pages); the function words of a language say as much for the texts that
matter here, and counting them is a set lookup per word. A text written in a spaceless
script (CJK) is marked as such: it is segmented, not stemmed; one in Arabic, Greek or
Cyrillic letters takes the language its script names (an Arabic question read as English
was handed to the English-only embedding model, which ranked its answer seventh).

Short texts (a table cell, a menu item) hold too few function words to tell; they take the
language of their page (``languages``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from htmlrag_chat.html.text import CJK

CJK_LANGUAGE = "cjk"
MIN_HITS = 2  # function words a text needs to be judged on its own

# About twenty of the most frequent function words of each language a Snowball stemmer
# covers and the web is often written in; words shared by two languages count for both.
_STOP_WORDS = {
    "en": "the of and to in is that for it was on with as are by this be at from or have "
    "an they which you not but were his her has had their what who how",
    "de": "der die das und ist nicht zu den von mit sich des auf für im in dem ein eine auch "
    "es an als wie bei nach aus wird werden hat oder sind einer welche welcher wer",
    "fr": "le la les de des et est une un du en que qui dans pour pas au sur par ne ce se "
    "plus sont avec il elle aux quel quelle",
    "es": "el la los las de del y en que un una es por con para se no su al lo como más "
    "pero sus le ya fue qué cuál cuántos",
    "it": "il la di che è un una per non del della le gli con da in sono al dei più ma si "
    "nel quanti quale",
    "pt": "o a os as de do da dos das e que em um uma para com não por se no na mais foi ao "
    "é qual quantos",
    "nl": "de het een en van is dat op te in niet zijn voor met die aan er ook als bij wat",
    "pl": "i w nie na się z do to że jest o jak po co ale od tak za przez są już oraz ile "
    "jakie który",
    "fi": "ja on ei se että oli ovat mutta kun myös hän tai jos niin ole kuin vain mikä",
    "hu": "a az és hogy nem is egy van meg de csak már mint ki el ha volt azt mennyi",
    "sv": "och att det som en är på av för med till den har inte om ett var men",
    "da": "og at det som en er på af for med til den har ikke om et var men",
    "no": "og at det som en er på av for med til den har ikke om et var men",
}
# What a reader is told to answer in (``language_name``).
_NAMES = {
    "en": "English",
    "de": "German",
    "fr": "French",
    "es": "Spanish",
    "it": "Italian",
    "pt": "Portuguese",
    "nl": "Dutch",
    "pl": "Polish",
    "fi": "Finnish",
    "hu": "Hungarian",
    "sv": "Swedish",
    "da": "Danish",
    "no": "Norwegian",
}
# Scripts that name the language a Snowball stemmer reads them in: Persian and Urdu are
# stemmed as Arabic, Ukrainian or Bulgarian as Russian; closer than no stems, and enough to
# tell that a question is not in English.
_SCRIPTS = {
    "ar": re.compile("[\u0600-\u06ff\u0750-\u077f]"),
    "el": re.compile("[\u0370-\u03ff\u1f00-\u1fff]"),
    "ru": re.compile("[\u0400-\u04ff]"),
}
_LANGUAGES = {
    word: tuple(code for code, words in _STOP_WORDS.items() if word in words.split())
    for word in {word for words in _STOP_WORDS.values() for word in words.split()}
}


def function_words(language: str) -> frozenset[str]:
    """The function words listed for ``language`` (empty for one not listed): words that
    tell a language, and say nothing of what a text is about."""
    return frozenset(_STOP_WORDS.get(language, "").split())


def detect(words: Sequence[str]) -> str:
    """The language of casefolded ``words`` by its function words: a code of ``_STOP_WORDS``
    (ties go to the earlier one), or "" when fewer than ``MIN_HITS`` are found."""
    hits = _hits(words)
    if not hits:
        return ""
    order = list(_STOP_WORDS)
    best = max(hits, key=lambda code: (hits[code], -order.index(code)))
    return best if hits[best] >= MIN_HITS else ""


def language_name(words: Sequence[str]) -> str:
    """The English name of the language of casefolded ``words``, only where its function
    words leave no doubt: ``MIN_HITS`` or more, and more than any other language's. Small
    readers told to answer "in the language of the question" answer a German one in English
    often enough (docs/evaluation.md) that the reader is told the language by name; told
    the wrong one (a German question that also reads as English: "Was kostet die Lackierung
    ... Plug-in"), it would be worse off than not told, hence no name on a tie."""
    (best, most), *rest = _hits(words).most_common(2) or [("", 0)]
    if most < MIN_HITS or (rest and rest[0][1] == most):
        return ""
    return _NAMES[best]


def written_in(words: Sequence[str], language: str) -> bool | None:
    """Whether casefolded ``words`` read as ``language``: None when they hold too few
    function words to tell (fewer than ``MIN_HITS`` of any language), else whether
    ``language`` has as many of them as any other ("Hugo Bustos detectó 112 motorizados ...
    que fueron llevados" reads as French as much as Spanish: Spanish, when that was asked)."""
    hits = _hits(words)
    most = max(hits.values(), default=0)
    return None if most < MIN_HITS else hits[language] == most


def _hits(words: Sequence[str]) -> Counter[str]:
    hits: Counter[str] = Counter()
    for word in words:
        hits.update(_LANGUAGES.get(word, ()))
    return hits


def script_language(text: str, words: Sequence[str]) -> str:
    """``CJK_LANGUAGE`` when CJK characters outnumber the other words, else ``detect``, else
    the language of the script that writes most of the words' letters (``_SCRIPTS``)."""
    cjk = len(CJK.findall(text))
    if cjk and cjk >= len(words):
        return CJK_LANGUAGE
    return detect(words) or _script(text, sum(map(len, words)))


def _script(text: str, letters: int) -> str:
    for language, script in _SCRIPTS.items():
        if letters and 2 * len(script.findall(text)) > letters:
            return language
    return ""


def languages(judged: Sequence[str], pages: Sequence[int]) -> list[str]:
    """Each text's language (``judged``: its own verdict, "" when undecided), the undecided
    taking their page's most frequent verdict; "" where no text of the page decided."""
    per_page: dict[int, Counter[str]] = {}
    for language, page in zip(judged, pages, strict=True):
        if language:
            per_page.setdefault(page, Counter())[language] += 1
    fallback = {page: counts.most_common(1)[0][0] for page, counts in per_page.items()}
    return [
        language or fallback.get(page, "") for language, page in zip(judged, pages, strict=True)
    ]
