"""Chat-template special tokens that are spelled like markup, for cleaning and ``safety``.

Most templates mark their control tokens with ``<|...|>`` (Llama 3, ChatML, Phi, gpt-oss,
DeepSeek's full-width form); ``safety`` breaks any such marker up. Others use plain names:
Gemma's ``<start_of_turn>``, ``<end_of_turn>``, ``<bos>``, ``<eos>``, SentencePiece's
``<s>``, ``</s>``, ``<unk>``, ``<pad>``, Qwen's ``<think>`` and ``<tool_call>``, Mistral's
``[INST]`` and the BERT family's ``[SEP]``. A page that writes them as elements gets them
parsed as elements, so cleaning unwraps them (their text stays); written as text, or by a
model, ``safety`` breaks them up like the others. The names live here, in the lowest layer
that needs them.
"""

from __future__ import annotations

# Names that appear as <name> and </name>.
ANGLE_TOKENS = frozenset(
    """
    bos eos pad unk mask s start_of_turn end_of_turn start_of_image end_of_image
    start_of_audio end_of_audio image_soft_token audio_soft_token think tool_call
    tool_response sop eop
    """.split()
)
# Names that appear as [NAME] and [/NAME].
BRACKET_TOKENS = frozenset(
    """
    INST SYS SYSTEM_PROMPT TOOL_CALLS AVAILABLE_TOOLS TOOL_RESULTS TOOL_CONTENT IMG
    IMG_BREAK IMG_END CLS SEP MASK PAD UNK gMASK sMASK
    """.split()
)
