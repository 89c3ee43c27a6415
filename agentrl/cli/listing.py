"""``agentrl list``: every env id with a one-line description, by domain, then the PettingZoo envs."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """Add ``list`` to the ``agentrl`` command's subparsers."""
    listing = commands.add_parser("list", help="list every env id with a one-line description")
    listing.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the registered ids by group (the benchmark domains first) and the multi-agent envs."""
    from agentrl.core.registry import registered_envs

    specs = registered_envs()
    groups: dict[str, list[Any]] = {}
    for spec in specs:
        groups.setdefault(spec.group, []).append(spec)
    # the benchmark domains first, then the groups the bench suites leave out (multi-agent seats, toys)
    order = sorted(groups, key=lambda name: (not any(spec.benchmark for spec in groups[name]), name.lower()))
    width = max(len(spec.env_id) for spec in specs)
    print("Env ids (gym.make), by domain:")
    for name in order:
        extra = "" if any(spec.benchmark for spec in groups[name]) else "  (not in the bench suites)"
        print(f"\n{name}{extra}")
        for spec in groups[name]:
            text = f"[deprecated] {spec.deprecated}" if spec.deprecated else spec.description
            print(f"  {spec.env_id:<{width}}  {text}")
    from agentrl.envs.multiagent import MULTIAGENT_ENVS

    print("\nMulti-agent envs (PettingZoo; agentrl.envs.multiagent.<name>.env() is AEC, .parallel_env() the parallel "
          "form of a parallel game; `agentrl league --env NAME`):")
    width = max(len(name) for name in MULTIAGENT_ENVS)
    for name, (kind, description) in sorted(MULTIAGENT_ENVS.items()):
        print(f"{name:<{width}}  {kind:<8}  {description}")
    return 0
