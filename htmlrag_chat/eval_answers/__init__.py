"""``eval answers``: what a reader makes of each method's context, scored.

``eval qa`` asks whether the answer survives pruning; this asks what users get: every
method's context at every budget, in every rendering, goes to a real reader (any backend:
a GGUF file in this process, a server, transformers) through the product's own prompt
layout, citation filter and citation check, with greedy decoding, and the answer is scored
(``grading.py``). It sits above ``eval/`` (datasets, items, methods, the result cache), the
reader and the agent's reading, and below the command line: ``tests/test_layers.py`` checks
that nothing below imports it.
"""
