"""The ``agentrl`` command: ``list``, ``play``, ``check``, ``bench``, ``redteam``, ``league``, ``serve-*``...

One module per command, each with an ``add_parser(commands)`` that adds its subcommand and sets ``run=``:
:mod:`.listing` (``list``), :mod:`.check`, :mod:`.new_domain`, :mod:`.play`, :mod:`.demo`, :mod:`.bench`,
:mod:`.redteam`, :mod:`.league`; ``osworld`` is :mod:`agentrl.envs.osworld.cli` and ``train``
:mod:`agentrl.train.cli`, which register themselves the same way; the ``serve-*`` commands are one table in
:mod:`.serve`, each handing its arguments to its server's own ``main``. :mod:`.options` holds what several
commands share (``KEY=VALUE`` options, the agent and backend options).

>>> main(["list"])  # doctest: +ELLIPSIS
Env ids (gym.make), by domain:
<BLANKLINE>
FlashGame
  AgentRL/FlashGame-Catch-v0 ...
0
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from agentrl.cli import bench, check, demo, league, listing, new_domain, play, redteam, serve

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``agentrl`` command."""
    import agentrl
    from agentrl.envs.osworld.cli import add_parser as add_osworld_parser
    from agentrl.train.cli import add_train_parser

    parser = argparse.ArgumentParser(prog="agentrl", description="AgentRL: environments for LLM agents.")
    parser.add_argument("--version", action="version", version=f"agentrl {agentrl.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in (listing, check, new_domain, play, demo, bench, redteam, league):
        command.add_parser(commands)
    add_osworld_parser(commands)
    add_train_parser(commands)
    serve.add_parsers(commands)  # listed for --help; main() hands their arguments to the server's own parser
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``agentrl`` command; returns the exit code."""
    import gymnasium as gym

    from agentrl.core.errors import AgentRLError

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in serve.SERVERS:
        return serve.run_server(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        return int(args.run(args))
    except (AgentRLError, gym.error.Error, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
