"""The ``serve-*`` commands: each hands its arguments to its server's own ``main`` (and its own ``--help``).

>>> sorted(SERVERS)
['serve-desktop', 'serve-env', 'serve-model', 'serve-retriever', 'serve-sandbox']
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

__all__ = ["SERVERS", "add_parsers", "run_server"]

SERVERS: dict[str, tuple[str, str]] = {
    "serve-retriever": (
        "agentrl.envs.search.server:main",
        "serve a Search-v0 retrieval index over HTTP on 127.0.0.1",
    ),
    "serve-model": (
        "agentrl.llm.server:main",
        "serve tiny, smollm2 or a model folder over an OpenAI-compatible API on 127.0.0.1",
    ),
    "serve-sandbox": (
        "agentrl.sandboxes.server:main",
        "run Python sandboxes for clients over HTTP on 127.0.0.1, with tokens and per-client limits",
    ),
    "serve-env": (
        "agentrl.serving.env_server:main",
        "serve any env id over OpenEnv's protocol (WebSocket sessions, /reset, /step) for remote trainers "
        "and gym.make(ID, remote=URL)",
    ),
    "serve-desktop": (
        "agentrl.envs.osworld.server:main",
        "serve a desktop (Xvfb, window manager, apps) over OSWorld's VM-server HTTP API, for "
        "AgentRL/OSWorld-v0 with provider='remote'",
    ),
}
"""``command -> ("module:function", help line)``: the server's ``main(argv)`` and what ``agentrl --help`` says."""


def add_parsers(commands: Any) -> None:
    """List every server under the ``agentrl`` command, for ``--help`` (their options are their own)."""
    for name, (_, help_line) in SERVERS.items():
        commands.add_parser(name, help=f"{help_line} (options: agentrl {name} --help)", add_help=False)


def run_server(name: str, argv: Sequence[str]) -> int:
    """Run the server ``name`` (a key of :data:`SERVERS`) with its own arguments; returns its exit code."""
    module, _, function = SERVERS[name][0].partition(":")
    server_main = getattr(importlib.import_module(module), function)
    return int(server_main(list(argv)) or 0)
