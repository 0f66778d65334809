"""Evaluation: how much of what a question needs survives cleaning and pruning to a budget.

``htmlrag-chat eval`` runs our pruning and the baselines a user would otherwise pick on the
same pages, with the same tokenizer, and scores every context by its visible text. This
package sits beside the command line: it uses the pipeline, the HTML core, the scorers and
the pruning factory (``default`` is the recipe ``ask`` builds), and the store only through
a protocol (``stored.DerivedStore``); nothing from the reader, the agent, the web or the
interface, which ``tests/test_layers.py`` checks against its imports.
"""
