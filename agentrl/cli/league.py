"""``agentrl league``: a round robin of players on a turn-based multi-agent game (:mod:`agentrl.bench.multiagent`)."""

from __future__ import annotations

import argparse
from typing import Any

from agentrl.cli.options import add_backend_options, add_env_kwarg, agent_spec, parse_kwargs

__all__ = ["add_parser", "run"]


def add_parser(commands: Any) -> None:
    """Add ``league`` to the ``agentrl`` command's subparsers."""
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
    add_env_kwarg(league, help="the game's env() argument (repeatable)")
    league.add_argument("--transcript", action="store_true", help="keep every move's text in games.jsonl")
    league.add_argument("--verbose", "-v", action="store_true", help="print each game's result")
    agent_group = league.add_argument_group(
        "an agent to add to the league (built as `agentrl bench --agent` builds it)"
    )
    agent_group.add_argument("--agent", help="oracle, random, react, or an import path package.module:Class")
    agent_group.add_argument("--agent-name", help="the agent's name in the table (default: the agent's name)")
    add_backend_options(agent_group)
    league.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Play the round robin and print its Elo and win/draw/loss table."""
    from agentrl.bench.multiagent import format_league_table, run_league

    players = [name.strip() for name in args.players.split(",") if name.strip()]
    builder = None
    agent = None
    if args.agent:
        builder = agent_spec(args).build()
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
            env_kwargs=parse_kwargs(args.env_kwarg),
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
