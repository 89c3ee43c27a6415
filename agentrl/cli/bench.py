"""``agentrl bench``: benchmark an agent on envs (:mod:`agentrl.bench`), or ``--compare`` two runs."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from agentrl.cli.options import add_backend_options, add_env_kwarg, agent_spec, parse_kwargs

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """Add ``bench`` to the ``agentrl`` command's subparsers."""
    bench = commands.add_parser(
        "bench",
        help="benchmark an agent on envs: resumable results.jsonl, summary table, report.html",
        description="Benchmark an agent on one or more envs. Re-running the same command resumes: episodes "
        "already in OUT/results.jsonl are skipped, except those that ended in an infrastructure error (the env "
        "could not be made or died), which run again. Use --compare RUN_A RUN_B to compare two runs.",
    )
    which = bench.add_argument_group("what to run")
    which.add_argument("--env", nargs="+", metavar="ID", help="env id(s)")
    which.add_argument("--suite", help="a named set of env ids: all, text, games, desktop, quick")
    which.add_argument("--agent", help="oracle, random, react, or an import path package.module:Class")
    which.add_argument(
        "--harness",
        metavar="MODULE:FUNCTION",
        help="instead of --agent: an agent harness run_episode(env, client, model) that plays each episode through "
        "an OpenAI client, pointed at --backend's model (smollm2 by default; --backend openai --base-url URL "
        "--model NAME for a server)",
    )
    which.add_argument("--episodes", type=int, help="episodes per seed per env (default 10)")
    which.add_argument("--seeds", type=int, nargs="+", default=[0], help="base seeds (default 0)")
    which.add_argument("--k", type=int, default=1, help="attempts per task, for pass@k (default 1)")
    which.add_argument(
        "--all-tasks",
        action="store_true",
        help="sweep every task of each env's dataset exactly once, in dataset order (--k attempts each), and report "
        "the benchmark's own score (EX, accuracy, HealthBench score, success rate) with the dataset file's sha256 "
        "in OUT/score.json; needs a dataset (e.g. --env-kwarg dataset=path/test.jsonl)",
    )
    which.add_argument("--split", metavar="NAME", help="the dataset split, for envs whose dataset has named splits "
                       "(SQL: dev, train...; OSWorld: test_all, test_small...)")
    add_env_kwarg(which)
    llm = bench.add_argument_group("agent and backend options")
    add_backend_options(llm)
    how = bench.add_argument_group("how to run")
    how.add_argument("--concurrency", type=int, default=1, help="episodes in flight at once (default 1)")
    how.add_argument(
        "--action-timeout",
        type=float,
        default=300.0,
        help="seconds an agent may take per action before the episode is failed (default 300)",
    )
    how.add_argument("--out", default="bench-results", help="output directory (default ./bench-results)")
    how.add_argument(
        "--retry-errors",
        action="store_true",
        help="also re-run episodes that ended in an agent error (infrastructure errors are re-run anyway)",
    )
    how.add_argument(
        "--no-system-check",
        action="store_true",
        help="run every env even when a system part it needs (Chromium, Xvfb...) looks missing; by default those "
        "envs are skipped with the command that installs the part",
    )
    how.add_argument("--no-progress", action="store_true", help="no progress bar")
    bench.add_argument(
        "--compare",
        nargs=2,
        metavar=("RUN_A", "RUN_B"),
        help="compare two output directories (or results files) instead of running: paired tests where both "
        "played the same tasks (bootstrap over tasks for reward, McNemar for success), else independent intervals",
    )
    bench.add_argument("--html", metavar="PATH", help="with --compare: also write the comparison as a page")
    bench.add_argument("--allow-drift", action="store_true",
                       help="with --compare: compare runs whose env locks differ (the env's code, data, judge or "
                       "library versions moved); the drift is listed under the table")
    bench.add_argument(
        "--regrade",
        metavar="RUN",
        help="instead of running: score every episode of RUN again on the env as it is now (its recorded actions "
        "replayed from the same task) and list each episode whose verdict flips, and why; writes RUN/regrade.json",
    )
    bench.add_argument(
        "--plan",
        metavar="PILOT_RUN",
        help="instead of running: from a pilot run with repeats (--k 3), how many tasks a paired comparison needs at "
        "1, 3 and 5 attempts per task to detect --difference in success rate (alpha 0.05, power 0.8)",
    )
    bench.add_argument("--difference", type=float, default=0.1,
                       help="for --plan: the change in success rate to detect (default 0.1, ten points)")
    bench.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run the benchmark (or compare two runs); exit status 2 on a usage error."""
    from agentrl.bench.compare import compare_runs, format_comparison

    try:
        if args.regrade:
            from agentrl.bench.regrade import REGRADE_FILE, format_regrade, regrade_run

            regraded = regrade_run(args.regrade)
            print(format_regrade(regraded))
            print(f"every episode: {args.regrade.rstrip('/')}/{REGRADE_FILE}")
            return 0
        if args.plan:
            from agentrl.bench.noise import format_plan
            from agentrl.bench.results import load_run
            from agentrl.bench.stats import summarize

            print(format_plan(summarize(list(load_run(args.plan))), args.difference))
            return 0
        if args.compare:
            result = compare_runs(*args.compare, allow_drift=args.allow_drift)
            for problem in result.problems:
                print(f"warning: {problem}", file=sys.stderr)
            print(format_comparison(result))
            if args.html:
                from pathlib import Path

                from agentrl.bench.report import render_comparison

                Path(args.html).write_text(render_comparison(result), encoding="utf-8")
                print(f"page: {Path(args.html).resolve()}")
            return 0
        return _run_bench(args)
    except (ValueError, RuntimeError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _system_parts() -> list[dict[str, Any]]:
    """The rows of ``agentrl/_system_deps.py``'s table: which system parts this machine has."""
    from agentrl._system_deps import Groups, Machine, report

    return list(report(Groups(), Machine.here())["parts"])


def _run_bench(args: argparse.Namespace) -> int:
    from agentrl.bench.report import format_error_lines, format_skip_lines
    from agentrl.bench.runner import BenchConfig, run_bench
    from agentrl.bench.stats import format_summary, summarize
    from agentrl.bench.suites import resolve_env_ids

    harness = getattr(args, "harness", None)
    if harness and args.agent:
        raise ValueError("give --agent or --harness, not both")
    if harness:
        args.agent = "agentrl.agents.harness:HarnessAgent"
        args.backend = args.backend or "smollm2"
    if not args.agent:
        raise ValueError("give an agent: --agent oracle|random|react|package.module:Class, or --harness MODULE:FN")
    env_ids = resolve_env_ids(args.env, args.suite)
    env_kwargs = parse_kwargs(args.env_kwarg)
    if args.all_tasks and args.episodes is not None:
        raise ValueError("--all-tasks runs every task of the dataset once: drop --episodes (use --k for attempts)")
    if args.split is not None:
        from agentrl.bench.sweep import check_split_supported

        check_split_supported(env_ids)
        if env_kwargs.get("split", args.split) != args.split:
            raise ValueError(f"--split {args.split} and --env-kwarg split={env_kwargs['split']} disagree; give one")
        env_kwargs["split"] = args.split
    spec = agent_spec(args, **({"harness": harness} if harness else {}))
    config = BenchConfig(
        env_ids=env_ids,
        agent=spec,
        out=args.out,
        episodes=args.episodes if args.episodes is not None else 10,
        seeds=args.seeds,
        k=args.k,
        concurrency=args.concurrency,
        action_timeout=args.action_timeout,
        env_kwargs=env_kwargs,
        retry_errors=args.retry_errors,
        progress=not args.no_progress,
        command=["agentrl", *args.argv],
        system_parts=None if args.no_system_check else _system_parts(),
        all_tasks=args.all_tasks,
    )
    outcome = run_bench(config)
    if outcome.ran:
        print(f"ran {outcome.ran} episode(s) in {outcome.wall_s:.1f} s; {outcome.errors} ended in an error")
    print()
    # This command's rows only: several runs into one --out (as `make demo` does) each print their own,
    # and the report line below says how many rows the whole directory holds.
    this_run = summarize(outcome.planned)
    if this_run:
        from agentrl.bench.noise import format_noise, measure_noise

        print(format_summary(this_run))
        for group in this_run:  # with repeats (--k, --seeds): how much of that table is noise
            noise = measure_noise(group.records)
            if noise.tasks or noise.runs > 1:
                print(format_noise(group.group_id, noise))
        print()
    if outcome.sweeps:
        from agentrl.bench.stats import agent_label
        from agentrl.bench.sweep import format_sweep_lines

        print("\n".join(format_sweep_lines(outcome.sweeps, agent_label(spec.config()))))
        print()
    notes = format_skip_lines(outcome.skipped) + format_error_lines(outcome.planned)
    if notes:
        print("\n".join(notes))
        print()
    print(f"results: {outcome.out / 'results.jsonl'} ({len(outcome.records)} episodes)")
    if outcome.report_path is not None:
        print(f"report:  {outcome.report_path} ({_report_rows_note(len(summarize(outcome.records)), len(this_run))})")
    if outcome.score_path is not None:
        print(f"score:   {outcome.score_path}")
    return 0


def _report_rows_note(report_rows: int, shown_rows: int) -> str:
    """How many rows the report of an --out directory holds, next to the rows this run printed.

    >>> print(_report_rows_note(2, 2))
    2 rows
    >>> print(_report_rows_note(9, 2))
    9 rows from every run into this directory; the table above is this run's 2
    """
    rows = f"{report_rows} row{'' if report_rows == 1 else 's'}"
    if report_rows == shown_rows:
        return rows
    if shown_rows == 0:
        return f"{rows} from every run into this directory"
    return f"{rows} from every run into this directory; the table above is this run's {shown_rows}"
