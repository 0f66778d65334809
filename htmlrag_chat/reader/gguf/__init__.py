"""The GGUF backend: a GGUF file read by llama.cpp in this process (``chat.py``), and all the
program knows of it as a backend (``backend.py``: when it answers, what it finds on disk,
its ``gpu_layers`` setting, its palette entry, its row in ``models``).

Its extra is declared here, so that whichever of its modules is imported first, a missing
llama-cpp-python is the one line naming it.
"""

from __future__ import annotations

from htmlrag_chat.modelio.extras import Extra, declare_extra

EXTRA = Extra(
    "gguf",
    ("llama_cpp",),
    "it compiles llama.cpp on its first install: 10-40 minutes on 2 cores, prebuilt CPU "
    "wheels in docs/install.md",
)
declare_extra(EXTRA)
