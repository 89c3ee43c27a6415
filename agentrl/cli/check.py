"""``agentrl check ID``: :func:`agentrl.testing.check_domain` on an env id (``--import`` for your own package's)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from agentrl.cli.options import parse_kwargs

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """Add ``check`` to the ``agentrl`` command's subparsers."""
    check = commands.add_parser("check", help="run agentrl.testing.check_domain on an env id")
    check.add_argument("env_id")
    check.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    check.add_argument("--kw", nargs="*", default=[], metavar="KEY=VALUE", help="gym.make keyword arguments")
    check.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE first (from the current folder too), for an id your own package registers: "
        "agentrl check AgentRL/MyDomain-v0 --import my_domain (repeatable)",
    )
    check.set_defaults(run=run)


def _import_modules(names: Sequence[str]) -> str | None:
    """Import each module, from the current folder too (as ``python -m`` does), so that it registers its ids.

    Returns the error message when one cannot be imported, else ``None``.
    """
    import importlib
    import os

    if names and os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            return f"--import {name}: {exc} (run from the folder that holds {name}/, or install it)"
    return None


def run(args: argparse.Namespace) -> int:
    """Check the id; exit status 1 when a check fails, 2 when the id or an ``--import`` cannot be found."""
    import gymnasium as gym

    from agentrl.testing import DomainCheckError, check_domain

    problem = _import_modules(args.imports)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        check_domain(args.env_id, seeds=tuple(args.seeds), make_kwargs=parse_kwargs(args.kw), log=print)
    except DomainCheckError as exc:
        print(f"FAILED: {exc}", file=sys.stderr)
        return 1
    except gym.error.Error as exc:
        if args.env_id in gym.registry:
            raise
        hint = "" if args.imports else "\n(an id your own package registers needs --import PACKAGE, from its folder)"
        print(f"error: {exc}{hint}", file=sys.stderr)
        return 2
    print(f"{args.env_id}: all checks passed")
    return 0
