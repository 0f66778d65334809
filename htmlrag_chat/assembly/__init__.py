"""Assembly: the settings resolved once into a plan, then the parts loaded from it.

``wiring`` builds what ``ask``, the chat app and the MCP server share (the reader through its
backend, the recipe, the recorder, the agent); ``inventory`` shows the same plan as the
``models`` command lists it, loading nothing. Above the stages, below the faces, and
importing none of them.
"""
