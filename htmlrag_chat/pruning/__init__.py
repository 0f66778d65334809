"""The pruning layer: a page's bytes to the HTML a reader gets, within a token budget.

``pipeline`` runs the stages (decode, clean, then per stage split, block, score, prune),
``recipe`` says which stages users run, ``factory`` builds a recipe's scorers from the
settings, and ``tokens`` loads the tokenizer that budgets count in (the counting protocol
itself is ``base.counting``, below the HTML core). The scorers are ``scoring/``, beside this
package; both know blocks, not readers, the web, the store or the faces.
"""
