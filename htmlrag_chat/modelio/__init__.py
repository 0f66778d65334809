"""Model plumbing: where models come from and what runs them, beside the true base.

``hub.py`` (models found here first, a quick hub check, downloads), ``loader.py`` (the causal
LM the reader and the generative pruner share), ``device.py`` (CUDA, MPS or the CPU),
``extras.py`` (which optional install each feature needs, and the one line naming it),
``installer.py`` (how this copy was installed, for those lines), ``listing.py`` (a model as
``models`` lists it) and ``wheel_model.py`` (a model file published as PyPI wheels). It
imports only the base (``base/``, ``settings/``); everything that loads a model stands on it.
"""
