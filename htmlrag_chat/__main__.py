from __future__ import annotations

from htmlrag_chat.cli import main

raise SystemExit(main())
