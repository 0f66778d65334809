"""The subcommands of ``htmlrag-chat``, one module per area; ``cli.py`` assembles them."""
