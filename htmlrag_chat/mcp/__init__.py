"""The MCP server: the third face of htmlrag-chat, beside ``commands/`` and ``tui/``.

Agents (Claude Code, Cursor, goose, any MCP client) call its tools for web context that
fits a token budget, for one page pruned to a question, or for a cited answer; they read
the stored conversations and cached pages as resources. It builds its parts through
``assembly/wiring.py`` as ``ask`` does, once per process, and an agent per call over them.

``results.py`` holds the tools' output schemas, ``untrusted.py`` how page text is handed
over as data, ``service.py`` the work of each tool, ``server.py`` the protocol (tools,
resources, progress, transports) on the official ``mcp`` SDK.
"""
