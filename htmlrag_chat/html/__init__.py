"""The query-independent HTML core: decoding, cleaning, block trees, greedy pruning.

This package never imports the model, web or interface layers above it.
"""
