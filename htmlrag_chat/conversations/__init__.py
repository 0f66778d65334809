"""Conversations kept in the cache file: the open one with the turns a follow-up builds on
(shared by the chat app and ``ask``), and a stored one as Markdown (the app's Ctrl+S and
``history show``/``export``). No widgets and no commands here: both sides import this."""
