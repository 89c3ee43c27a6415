"""``agentrl new-domain NAME``: write the skeleton of a new text domain (:mod:`agentrl.scaffold`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """Add ``new-domain`` to the ``agentrl`` command's subparsers."""
    new_domain = commands.add_parser(
        "new-domain",
        help="write the skeleton of a new text domain (env, actions, verify, tasks, datasets, a test) that "
        "passes agentrl check",
        description="Writes the package NAME/ (into --dir, default the current folder): env.py, actions.py, "
        "verify.py, tasks.py, datasets.py, an __init__.py that registers AgentRL/<CamelName>-v0 and a test file, "
        "filled with a tiny working example; then prints what to fill in and the command that checks it.",
    )
    new_domain.add_argument("name", help="the package name, lowercase snake_case (my_domain -> AgentRL/MyDomain-v0)")
    new_domain.add_argument("--dir", default=".", help="the folder to write NAME/ into (default: the current one)")
    new_domain.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Write the skeleton and print what to fill in; exit status 2 on a bad name or an existing folder."""
    from agentrl.scaffold import ScaffoldError, summary, write_domain

    try:
        skeleton = write_domain(args.name, args.dir)
    except ScaffoldError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(summary(skeleton))
    return 0
