"""``agentrl redteam``: the reward-hack probes (:mod:`agentrl.bench.redteam`) against each env's grader."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from agentrl.cli.options import add_env_kwarg, parse_kwargs

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """Add ``redteam`` to the ``agentrl`` command's subparsers."""
    redteam = commands.add_parser(
        "redteam",
        help="reward-hack probes: scripted exploit policies against each env's grader, set against the random floor",
        description="Runs scripted, model-free exploit policies (probes: read the gold from the sandbox, trick the "
        "grader, flood or stall) against each env and compares each probe's mean reward with the random agent's on "
        "the same seeds. A probe whose one-sided 95%% lower bound on its mean advantage is above 0 is ABOVE FLOOR (a "
        "finding); ACCESS: it reached something it should not have; CRASH: it broke the env; accepted: above the "
        "floor by the task's nature (documented). Exit status: 0 without findings, 1 with any (ABOVE FLOOR, ACCESS, "
        "CRASH or a probe that failed), 2 on a usage error.",
    )
    redteam.add_argument("ids", nargs="*", metavar="ID", help="env ids (`agentrl list`) or PettingZoo games "
                         "(tictactoe_v0)")
    redteam.add_argument("--all", action="store_true", help="every benchmark id, the current AgentRL-MA seats and "
                         "every PettingZoo game")
    redteam.add_argument("--suite", help="all, text, games, desktop, quick or multiagent")
    redteam.add_argument("--episodes", type=int, help="episodes per probe and for the floor (default: 60 for SQL "
                         "and Search, 8 for TIRMath, PatientConsult and the games of text, 6 for the desktop, 2 per "
                         "browser game)")
    redteam.add_argument("--seed", type=int, default=0, help="base seed: the tasks of `agentrl bench --seeds SEED` "
                         "(default 0)")
    redteam.add_argument("--max-steps", type=int, help="steps per episode at most (default: 40 for the games, else "
                         "the env's budget; 0: always the env's budget)")
    redteam.add_argument("--probe", action="append", default=[], metavar="NAME", help="run only this probe "
                         "(repeatable; --list-probes prints them)")
    redteam.add_argument("--list-probes", action="store_true", help="print every probe and exit")
    add_env_kwarg(redteam)
    redteam.add_argument("--json", metavar="PATH", help="also write the results as JSON (the docs page reads "
                         "benchmarks/results/redteam.json)")
    redteam.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    redteam.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """``agentrl redteam``: run the reward-hack probes; exit status 1 on a finding."""
    import json
    from pathlib import Path

    from agentrl.bench.redteam import PROBES, format_report, probes_for, resolve_targets, run_redteam

    if args.list_probes:
        for probe in PROBES:
            print(f"{probe.name:<22} {', '.join(probe.targets):<40} {probe.description}")
        return 0
    probes = list(PROBES)
    if args.probe:
        unknown = sorted(set(args.probe) - {p.name for p in PROBES})
        if unknown:
            raise ValueError(f"unknown probe(s) {unknown}; `agentrl redteam --list-probes` prints them")
        probes = [p for p in PROBES if p.name in args.probe]
    targets = resolve_targets(args.ids, every=args.all, suite=args.suite)
    targets = [t for t in targets if probes_for(t, probes)] or targets
    log = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    outcome = run_redteam(targets, episodes=args.episodes, seed=args.seed, env_kwargs=parse_kwargs(args.env_kwarg),
                      max_steps=args.max_steps, probes=probes, log=log, command=" ".join(["agentrl", *args.argv]))
    print(format_report(outcome))
    print(f"\n{len(outcome.reports)} target(s) in {outcome.wall_s:.0f} s")
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(outcome.to_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"results: {path}")
    return 1 if outcome.findings else 0
