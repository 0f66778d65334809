"""The Textual chat app: the interactive face of the agent (``htmlrag-chat`` with no command).

Widgets only show state; the agent runs in an async worker on the app's loop and its
CPU-heavy stages and model loading run in threads, so key presses are handled throughout.
"""
