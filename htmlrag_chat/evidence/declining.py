"""An answer that says its sources do not hold the answer: no claim about the world.

"The sources do not say" is what a reader should write when the context lacks the answer;
the evidence check must not flag it as unsupported (nothing in a source backs a sentence
about the sources' silence), and ``eval answers`` counts it as declined rather than wrong.
The phrases cover the languages of the dev sets; matched on the casefolded text.
"""

from __future__ import annotations

import re

_DECLINES = re.compile(
    "|".join(
        (
            # English
            r"\b(?:do|does|did)(?: not|n't) (?:\w+ )?(?:contain|mention|provide|include|say|"
            r"specify|state|give|list|have|offer|address|answer|show|indicate)",
            r"\bno (?:specific |relevant |direct )?(?:information|mention|details|data|answer)",
            r"\bnot (?:\w+ )?(?:mentioned|provided|specified|stated|available|included|found|"
            r"given|listed|contained|present|addressed|answered)",
            r"\b(?:cannot|can't|can not|unable to|could not|couldn't) (?:\w+ )?(?:answer|"
            r"determine|find|tell|provide|be determined|be answered|say|identify)",
            # German
            r"\b(?:enthalten|nennen|erwähnen|geben|liefern|sagen|beantworten)\b[^.]{0,40}"
            r"\b(?:keine|nicht)\b",
            r"\bkeine (?:\w+ )?(?:informationen|angaben|antwort|hinweise)",
            r"\bnicht (?:\w+ )?(?:erwähnt|angegeben|enthalten|genannt|beantwortet|beantworten|"
            r"bekannt|ersichtlich)",
            # Spanish, Portuguese, Italian
            r"\bno (?:se )?(?:contienen|contiene|mencionan?|proporcionan?|incluyen|indican?|"
            r"especifican?|dicen|hay información|puedo|es posible)",
            r"\b(?:ninguna|sin) información",
            r"\bnão (?:\w+ )?(?:contêm|contém|mencionam|menciona|fornecem|informam|especificam|"
            r"indicam|é possível|há informaç|posso)",
            r"\bnenhuma informação",
            r"\bnon (?:\w+ )?(?:contengono|contiene|menzionano|menziona|forniscono|specificano|"
            r"indicano|posso|è possibile|ci sono informazioni)",
            r"\bnessuna informazione",
            # French
            r"\bne (?:\w+ )?(?:contiennent|contient|mentionnent|mentionne|fournissent|précisent|"
            r"donnent|disent|permettent|peux|peut|trouve)\b",
            r"\baucune (?:\w+ )?information",
            r"\bpas (?:été )?(?:mentionné|précisé|indiqué|d'information)",
            # Polish, Finnish, Hungarian
            r"\bnie (?:\w+ )?(?:zawierają|zawiera|podają|podaje|wspominają|wspomina|ma "
            r"informacji|mogę|można|określają)",
            r"\bbrak (?:\w+ )?informacji",
            r"\b(?:ei|eivät) (?:\w+ )?(?:mainita|mainitse|kerrota|kerro|sisällä|löydy|ole tietoa)",
            r"\bnem (?:\w+ )?(?:tartalmaz|említ|szerepel|található|adnak|ad meg)",
            r"\bnincs (?:\w+ )?(?:információ|adat)",
            # Japanese, Arabic
            r"記載されていません|含まれていません|情報はありません|見つかりません|"
            r"言及されていません|記載がありません|わかりません",
            r"لا تحتوي|لا تذكر|لا يوجد|لم يتم ذكر|لا تتضمن",
        )
    )
)


def declines(text: str) -> bool:
    """Whether ``text`` says that its sources do not hold the answer."""
    return _DECLINES.search(text.casefold()) is not None
