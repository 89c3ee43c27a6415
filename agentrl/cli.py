"""The ``agentrl`` command: ``list``, ``play``, ``check``, ``bench``, ``redteam``, ``league``, ``serve-*``...

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
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from agentrl.core.options import parse_key_values

__all__ = ["main"]

_PLAY_HELP = (
    "Type your turn; finish it with a line holding only '.' (or press Ctrl-D).\n"
    "Commands on a line of their own: /reset (new episode), /quit, /system (show the system prompt)."
)


def _parse_kwargs(pairs: Sequence[str]) -> dict[str, Any]:
    """:func:`parse_key_values`, exiting with the message on a malformed pair."""
    try:
        return parse_key_values(pairs)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None


def _command_list(args: argparse.Namespace) -> int:
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


def _command_check(args: argparse.Namespace) -> int:
    import gymnasium as gym

    from agentrl.testing import DomainCheckError, check_domain

    problem = _import_modules(args.imports)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        check_domain(args.env_id, seeds=tuple(args.seeds), make_kwargs=_parse_kwargs(args.kw), log=print)
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


def _command_new_domain(args: argparse.Namespace) -> int:
    from agentrl.scaffold import ScaffoldError, summary, write_domain

    try:
        skeleton = write_domain(args.name, args.dir)
    except ScaffoldError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(summary(skeleton))
    return 0


def _command_osworld_coverage(args: argparse.Namespace) -> int:
    import json

    from agentrl.envs.osworld.runtime.apps import APP_PACKAGES, NOT_IN_DEBIAN, installed_apps
    from agentrl.envs.osworld.tasks.assets import AssetStore
    from agentrl.envs.osworld.tasks.coverage import coverage, format_coverage

    if args.apps is None:
        installed: list[str] | None = installed_apps()
    elif args.apps == "all":
        installed = [*APP_PACKAGES, *NOT_IN_DEBIAN]
    else:
        installed = [app.strip() for app in args.apps.split(",") if app.strip()]
    report = coverage(args.path, split=args.split, installed=installed, assets=AssetStore(args.assets_dir))
    if args.json:
        print(json.dumps(report.as_dict(), indent=1))
    else:
        print(format_coverage(report, tasks=not args.summary))
    return 0


def _command_osworld_fetch_assets(args: argparse.Namespace) -> int:
    import json

    from agentrl.envs.osworld.tasks.assets import AssetStore, asset_refs, fetch_assets
    from agentrl.envs.osworld.tasks.pool import read_tasks

    if args.max_mb <= 0 or args.retries < 1 or args.timeout <= 0:
        print("error: --max-mb and --timeout must be positive and --retries at least 1", file=sys.stderr)
        return 2
    pool = read_tasks(args.path, split=args.split)
    urls = [ref.url for task in pool.tasks for ref in asset_refs(task)]
    store = AssetStore(args.assets_dir)
    distinct = len(dict.fromkeys(urls))
    print(f"{len(pool.tasks)} tasks of {args.path} fetch {distinct} distinct files; asset cache: {store.root}",
          file=sys.stderr)
    report = fetch_assets(urls, store, max_bytes=int(args.max_mb * 1024**2), timeout_s=args.timeout,
                          retries=args.retries, progress=lambda line: print(line, file=sys.stderr, flush=True))
    if args.json:
        print(json.dumps({"assets_dir": str(store.root), "fetched": report.fetched, "cached": report.cached,
                          "failed": report.failed, "bytes_fetched": report.bytes_fetched}, indent=1))
    else:
        print(report.summary())
        for url, reason in report.failed.items():
            print(f"  failed {url}: {reason}")
    return 1 if report.failed else 0


def _read_turn(read_line: Callable[[], str], write: Callable[[str], Any]) -> str | None:
    """Lines until a lone '.', or ``None`` on EOF with nothing typed."""
    lines: list[str] = []
    while True:
        write("... " if lines else ">>> ")
        line = read_line()
        if line == "":  # EOF
            return "\n".join(lines) if lines else None
        line = line.rstrip("\n")
        if line == "." or (not lines and line.startswith("/")):
            return "\n".join(lines) if line == "." else line
        lines.append(line)


def play(
    env_id: str,
    *,
    seed: int | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    **make_kwargs: Any,
) -> list[float]:
    """Let a person play a text env in the terminal; returns the reward of each finished episode."""
    import gymnasium as gym

    source, sink = stdin or sys.stdin, stdout or sys.stdout

    def write(text: str) -> None:
        sink.write(text)
        sink.flush()

    env = gym.make(env_id, **make_kwargs)
    rewards: list[float] = []
    try:
        observation, info = env.reset(seed=seed)
        write(f"{_PLAY_HELP}\n\n[{info['task_id']}]\n{observation}\n\n")
        episode_return = 0.0
        while True:
            turn = _read_turn(source.readline, write)
            if turn is None or turn == "/quit":
                break
            if turn == "/system":
                write(env.unwrapped.system_prompt + "\n\n")
                continue
            if turn == "/reset":
                observation, info = env.reset()
                episode_return = 0.0
                write(f"\n[{info['task_id']}]\n{observation}\n\n")
                continue
            observation, reward, terminated, truncated, info = env.step(turn)
            episode_return += reward
            write(f"\n{observation}\n")
            write(f"(reward {reward:g}, turn {info['turn']}, {info['turns_left']} left)\n\n")
            if terminated or truncated:
                rewards.append(episode_return)
                write(f"Episode over ({info['done_reason']}), return {episode_return:g}. Next task:\n")
                observation, info = env.reset()
                episode_return = 0.0
                write(f"\n[{info['task_id']}]\n{observation}\n\n")
    finally:
        env.close()
    return rewards


def _command_play(args: argparse.Namespace) -> int:
    rewards = play(args.env_id, seed=args.seed, **_parse_kwargs(args.kw))
    if rewards:
        print(f"\nfinished {len(rewards)} episode(s); mean return {sum(rewards) / len(rewards):g}")
    return 0


def _command_demo(args: argparse.Namespace) -> int:
    from agentrl.demo import run_demo

    run_demo(env_id=args.env_id, seeds=range(args.seeds), agents=args.agents)
    return 0


def _command_bench(args: argparse.Namespace) -> int:
    from agentrl.bench.compare import compare_runs, format_comparison

    try:
        if args.compare:
            result = compare_runs(*args.compare)
            for problem in result.problems:
                print(f"warning: {problem}", file=sys.stderr)
            print(format_comparison(result))
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
    from agentrl.agents.registry import AgentSpec
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
    env_kwargs = _parse_kwargs(args.env_kwarg)
    if args.all_tasks and args.episodes is not None:
        raise ValueError("--all-tasks runs every task of the dataset once: drop --episodes (use --k for attempts)")
    if args.split is not None:
        from agentrl.bench.sweep import check_split_supported

        check_split_supported(env_ids)
        if env_kwargs.get("split", args.split) != args.split:
            raise ValueError(f"--split {args.split} and --env-kwarg split={env_kwargs['split']} disagree; give one")
        env_kwargs["split"] = args.split
    backend_options: dict[str, Any] = {}
    for key in ("model_path", "model", "base_url"):
        if getattr(args, key) is not None:
            backend_options[key] = getattr(args, key)
    agent_options = _parse_kwargs(args.agent_option)
    if harness:
        agent_options["harness"] = harness
    if args.temperature is not None:
        agent_options["temperature"] = args.temperature
    if args.max_tokens is not None:
        agent_options["max_tokens"] = args.max_tokens
    spec = AgentSpec(args.agent, backend=args.backend, backend_options=backend_options, agent_options=agent_options)
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
        print(format_summary(this_run))
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


def _command_redteam(args: argparse.Namespace) -> int:
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
    run = run_redteam(targets, episodes=args.episodes, seed=args.seed, env_kwargs=_parse_kwargs(args.env_kwarg),
                      max_steps=args.max_steps, probes=probes, log=log, command=" ".join(["agentrl", *args.argv]))
    print(format_report(run))
    print(f"\n{len(run.reports)} target(s) in {run.wall_s:.0f} s")
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(run.to_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"results: {path}")
    return 1 if run.findings else 0


def _command_league(args: argparse.Namespace) -> int:
    from agentrl.bench.multiagent import format_league_table, run_league

    players = [name.strip() for name in args.players.split(",") if name.strip()]
    builder = None
    agent = None
    if args.agent:
        from agentrl.agents.registry import AgentSpec

        backend_options = {key: getattr(args, key) for key in ("model_path", "model", "base_url")
                           if getattr(args, key) is not None}  # fmt: skip
        agent_options = _parse_kwargs(args.agent_option)
        if args.temperature is not None:
            agent_options["temperature"] = args.temperature
        if args.max_tokens is not None:
            agent_options["max_tokens"] = args.max_tokens
        spec = AgentSpec(args.agent, backend=args.backend, backend_options=backend_options, agent_options=agent_options)
        builder = spec.build()
        seed = args.seed

        def agent() -> Any:
            return builder(seed=seed)

    def progress(record: Any) -> None:
        if args.verbose:
            seats = " vs ".join(record.seats.values())
            results = ", ".join(f"{record.seats[s]} {r}" for s, r in record.results.items())
            print(f"game {record.seed}: {seats}: {results} ({record.reason}; {record.moves} moves)")

    try:
        result = run_league(
            args.env,
            players,
            games=args.games,
            seed=args.seed,
            agent=agent,
            agent_name=args.agent_name,
            env_kwargs=_parse_kwargs(args.env_kwarg),
            k=args.elo_k,
            out=args.out,
            on_game=progress,
            transcript=args.transcript,
        )
    finally:
        if builder is not None:
            builder.close()
    errors = sum(len(record.errors) for record in result.records)
    invalid = sum(sum(record.invalid_moves.values()) for record in result.records)
    print(f"{args.env}: {len(result.records)} games in {result.wall_s:.1f} s "
          f"({args.games} per pair per seat order); {invalid} invalid moves, {errors} player errors\n")  # fmt: skip
    print(format_league_table(result.table))
    if result.out is not None:
        print(f"\nresults: {result.out / 'games.jsonl'} and {result.out / 'league.json'}")
    return 0


def _add_backend_options(group: Any) -> None:
    """The options that build an agent's LLM backend (shared by ``bench`` and ``league``)."""
    group.add_argument("--backend", help="LLM backend: smollm2, transformers, openai")
    group.add_argument("--model-path", help="model directory (transformers backend)")
    group.add_argument("--model", help="model name (openai backend)")
    group.add_argument("--base-url", help="server URL, like http://127.0.0.1:8000/v1 (openai backend)")
    group.add_argument("--temperature", type=float, help="sampling temperature")
    group.add_argument("--max-tokens", "--max-new-tokens", dest="max_tokens", type=int, help="most tokens per turn")
    group.add_argument(
        "--agent-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="agent constructor argument, JSON value (repeatable)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``agentrl`` command."""
    import agentrl

    parser = argparse.ArgumentParser(prog="agentrl", description="AgentRL: environments for LLM agents.")
    parser.add_argument("--version", action="version", version=f"agentrl {agentrl.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    listing = commands.add_parser("list", help="list every env id with a one-line description")
    listing.set_defaults(run=_command_list)

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
    check.set_defaults(run=_command_check)

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
    new_domain.set_defaults(run=_command_new_domain)

    play_parser = commands.add_parser("play", help="play a text env yourself in the terminal")
    play_parser.add_argument("env_id")
    play_parser.add_argument("--seed", type=int, default=None)
    play_parser.add_argument("--kw", nargs="*", default=[], metavar="KEY=VALUE", help="gym.make keyword arguments")
    play_parser.set_defaults(run=_command_play)

    demo = commands.add_parser("demo", help="run the oracle and the random agent on a few seeds; print a table")
    demo.add_argument("--env-id", default="AgentRL/TIRMath-v0")
    demo.add_argument("--seeds", type=int, default=5, help="number of seeds (episodes per agent)")
    demo.add_argument("--agents", nargs="+", default=["oracle", "random"], choices=["oracle", "random"])
    demo.set_defaults(run=_command_demo)

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
    which.add_argument(
        "--env-kwarg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="gym.make keyword argument, JSON value (repeatable)",
    )
    llm = bench.add_argument_group("agent and backend options")
    _add_backend_options(llm)
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
        help="compare two output directories (or results files) instead of running",
    )
    bench.set_defaults(run=_command_bench)

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
    redteam.add_argument("--env-kwarg", action="append", default=[], metavar="KEY=VALUE",
                         help="gym.make keyword argument, JSON value (repeatable)")
    redteam.add_argument("--json", metavar="PATH", help="also write the results as JSON (the docs page reads "
                         "benchmarks/results/redteam.json)")
    redteam.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    redteam.set_defaults(run=_command_redteam)

    league = commands.add_parser(
        "league",
        help="round robin of players on a turn-based multi-agent game; Elo and win/draw/loss table",
        description="Every pair of players plays --games games in each seat order; prints Elo and win/draw/loss "
        "rates with 95%% Wilson intervals. Add an LLM agent with --agent react --backend smollm2.",
    )
    league.add_argument(
        "--env", default="tictactoe_v0", help="a turn-based game from `agentrl list` (default tictactoe_v0)"
    )
    league.add_argument(
        "--players",
        default="random,scripted,minimax",
        help="comma-separated built-in players: random, scripted, minimax, or package.module:Class "
        "(default random,scripted,minimax)",
    )
    league.add_argument("--games", type=int, default=20, help="games per pair per seat order (default 20)")
    league.add_argument("--seed", type=int, default=0, help="game i is seeded SEED+i (default 0)")
    league.add_argument("--out", help="directory for games.jsonl and league.json")
    league.add_argument("--elo-k", type=float, default=16.0, help="Elo K factor (default 16)")
    league.add_argument(
        "--env-kwarg", action="append", default=[], metavar="KEY=VALUE", help="the game's env() argument (repeatable)"
    )
    league.add_argument("--transcript", action="store_true", help="keep every move's text in games.jsonl")
    league.add_argument("--verbose", "-v", action="store_true", help="print each game's result")
    agent_group = league.add_argument_group(
        "an agent to add to the league (built as `agentrl bench --agent` builds it)"
    )
    agent_group.add_argument("--agent", help="oracle, random, react, or an import path package.module:Class")
    agent_group.add_argument("--agent-name", help="the agent's name in the table (default: the agent's name)")
    _add_backend_options(agent_group)
    league.set_defaults(run=_command_league)

    osworld = commands.add_parser("osworld", help="OSWorld task files: `agentrl osworld coverage PATH`, "
                                  "`agentrl osworld fetch-assets PATH`")
    osworld_commands = osworld.add_subparsers(dest="osworld_command", required=True, metavar="COMMAND")
    cover = osworld_commands.add_parser(
        "coverage",
        help="which tasks of OSWorld task files this desktop can run, and why not the others",
        description="Reads OSWorld task files as AgentRL/OSWorld-v0 does (file by file) and prints, per task, whether "
        "it can run here and what stops it (a file that cannot be parsed, a setup step, getter or metric not "
        "served, an app not installed), then totals per domain and overall and the top blockers.",
    )
    cover.add_argument("path", help="a folder of task files, a task list (evaluation_examples/test_all.json), the "
                       "evaluation_examples folder (its test_all list), or one task file")
    cover.add_argument("--split", metavar="NAME", help="with an evaluation_examples folder: the task list NAME.json")
    cover.add_argument("--apps", metavar="LIST", help="the apps the desktop has, comma-separated (xterm,chromium,"
                       "localc...), or 'all' (default: those on PATH here)")
    cover.add_argument("--json", action="store_true", help="machine-readable output")
    cover.add_argument("--summary", action="store_true", help="only the totals and the top blockers")
    cover.add_argument("--assets-dir", metavar="DIR", help="the asset cache to check the tasks' files in "
                       "(default $AGENTRL_CACHE/osworld/assets, else ~/.cache/agentrl/osworld/assets)")
    cover.set_defaults(run=_command_osworld_coverage)
    fetch = osworld_commands.add_parser(
        "fetch-assets",
        help="download once the files OSWorld tasks fetch (download steps, cloud_file getters) into the asset cache",
        description="Collects every URL of the tasks' download setup steps (config and postconfig) and cloud_file "
        "getters (result and expected), downloads those not cached yet (http/https only, a size cap, retries) into "
        "the asset cache, and reports fetched / already cached / failed. Episodes read the files from the cache "
        "and never download. Exit status 1 when a file failed.",
    )
    fetch.add_argument("path", help="a folder of task files, a task list (evaluation_examples/test_all.json), the "
                       "evaluation_examples folder (its test_all list), or one task file")
    fetch.add_argument("--split", metavar="NAME", help="with an evaluation_examples folder: the task list NAME.json")
    fetch.add_argument("--assets-dir", metavar="DIR", help="the asset cache (default $AGENTRL_CACHE/osworld/assets, "
                       "else ~/.cache/agentrl/osworld/assets)")
    fetch.add_argument("--max-mb", type=float, default=512.0, help="the largest file to keep, in MiB (default 512)")
    fetch.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    fetch.add_argument("--retries", type=int, default=3, help="tries per file (default 3, as OSWorld)")
    fetch.add_argument("--json", action="store_true", help="machine-readable output")
    fetch.set_defaults(run=_command_osworld_fetch_assets)

    from agentrl.train.cli import add_train_parser

    add_train_parser(commands)

    # Listed here for --help; main() hands its arguments to the server's own parser.
    commands.add_parser(
        "serve-retriever",
        help="serve a Search-v0 retrieval index over HTTP on 127.0.0.1 (options: agentrl serve-retriever --help)",
        add_help=False,
    )
    commands.add_parser(
        "serve-model",
        help="serve tiny, smollm2 or a model folder over an OpenAI-compatible API on 127.0.0.1 "
        "(options: agentrl serve-model --help)",
        add_help=False,
    )
    commands.add_parser(
        "serve-sandbox",
        help="run Python sandboxes for clients over HTTP on 127.0.0.1, with tokens and per-client limits "
        "(options: agentrl serve-sandbox --help)",
        add_help=False,
    )
    commands.add_parser(
        "serve-env",
        help="serve any env id over OpenEnv's protocol (WebSocket sessions, /reset, /step) for remote trainers "
        "and gym.make(ID, remote=URL) (options: agentrl serve-env --help)",
        add_help=False,
    )
    commands.add_parser(
        "serve-desktop",
        help="serve a desktop (Xvfb, window manager, apps) over OSWorld's VM-server HTTP API, for "
        "AgentRL/OSWorld-v0 with provider='remote' (options: agentrl serve-desktop --help)",
        add_help=False,
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``agentrl`` command; returns the exit code."""
    import gymnasium as gym

    from agentrl.core.errors import AgentRLError

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve-retriever"]:
        from agentrl.envs.search.server import main as serve_main

        return int(serve_main(argv[1:]) or 0)
    if argv[:1] == ["serve-model"]:
        from agentrl.llm.server import main as serve_model_main

        return int(serve_model_main(argv[1:]) or 0)
    if argv[:1] == ["serve-sandbox"]:
        from agentrl.sandboxes.server import main as serve_sandbox_main

        return int(serve_sandbox_main(argv[1:]) or 0)
    if argv[:1] == ["serve-env"]:
        import agentrl  # noqa: F401  (registers the ids)
        from agentrl.serving.env_server import main as serve_env_main

        return int(serve_env_main(argv[1:]) or 0)
    if argv[:1] == ["serve-desktop"]:
        from agentrl.envs.osworld.server import main as serve_desktop_main

        return int(serve_desktop_main(argv[1:]) or 0)
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        return int(args.run(args))
    except (AgentRLError, gym.error.Error, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
