"""The settings tree: each setting declared once (``tree.py``), read from the defaults, the
config file, the environment and options (``layered.py``), written by ``config set`` and
``config init`` (``edit.py``); the options each command takes are generated from it
(``commands/options.py``).

To add a setting: one ``Setting(...)`` line in ``tree.SETTINGS`` (section, name, kind,
default, help, the commands that take it as an option), and a field of the same name in the
dataclass its section builds (``reader.settings.ReaderSettings``, ``factory.PruneSettings``,
``web.settings.SearchSettings``, ``auth.McpSettings``, or ``wiring.AgentOptions`` for
research and web), with ``default("section.name")`` as its default. The option, the
variable, the file key, the check and the ``config`` row follow. A setting that a
registration owns (a search engine's key, a reader backend's option, a page source's
paths) is declared by it instead (``tree.declare``: ``web/engines.py``,
``Backend.settings``, ``SourceEntry.setting``).
"""
