"""``agentrl demo``: the oracle and the random agent on a few seeds of one env, as a table (:mod:`agentrl.demo`)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """Add ``demo`` to the ``agentrl`` command's subparsers."""
    demo = commands.add_parser("demo", help="run the oracle and the random agent on a few seeds; print a table")
    demo.add_argument("--env-id", default="AgentRL/TIRMath-v0")
    demo.add_argument("--seeds", type=int, default=5, help="number of seeds (episodes per agent)")
    demo.add_argument("--agents", nargs="+", default=["oracle", "random"], choices=["oracle", "random"])
    demo.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run :func:`agentrl.demo.run_demo`."""
    from agentrl.demo import run_demo

    run_demo(env_id=args.env_id, seeds=range(args.seeds), agents=args.agents)
    return 0
