"""``python -m agentrl.cli``: the ``agentrl`` command."""

from __future__ import annotations

from agentrl.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
