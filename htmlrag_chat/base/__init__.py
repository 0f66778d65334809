"""The base layer: what every stage and face stands on, importing nothing above it.

Errors and exit codes, typed progress events and their words, terminal safety, cancelling,
prompts, devices, the model hub, the optional extras, model loading, atomic writes, numbered
sources and the token-counting protocol. These modules import only each other and the
settings tree (``tests/test_layers.py``); ``counting`` imports nothing of the package.
"""
