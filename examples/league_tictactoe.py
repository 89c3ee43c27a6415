"""A round-robin tic-tac-toe league: Elo and win/draw/loss rates (95% intervals) of built-in players.

Every pair of players plays ``--games`` games in each seat order
(:func:`agentrl.bench.multiagent.run_league`, what ``agentrl league`` runs); results update Elo
ratings game by game. ``random`` moves at random, ``scripted`` wins or blocks when it can, and
``minimax`` plays perfectly, so the table should order them minimax > scripted > random::

    python examples/league_tictactoe.py --quick                 # 4 games per pair and seat order (CI)
    python examples/league_tictactoe.py --games 50 --env connect_four_v0

The same from the command line (add an LLM with ``--agent react --backend smollm2``)::

    agentrl league --env tictactoe_v0 --players random,scripted,minimax --games 20
"""

from __future__ import annotations

import argparse
from typing import Any

REQUIRES = ["pettingzoo"]
"""Optional packages this example needs (``pip install 'agentrl-gym[multiagent]'``)."""


def main(argv: list[str] | None = None) -> Any:
    """Play the league, print the table, and return the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="tictactoe_v0", help="a two-player turn-based game from `agentrl list`")
    parser.add_argument("--players", default="random,scripted,minimax")
    parser.add_argument("--games", type=int, default=20, help="games per pair per seat order")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="a directory for games.jsonl and league.json")
    parser.add_argument("--quick", action="store_true", help="4 games per pair and seat order (for CI)")
    args = parser.parse_args(argv)

    from agentrl.bench.multiagent import format_league_table, run_league

    players = [p.strip() for p in args.players.split(",") if p.strip()]
    games = 4 if args.quick else args.games
    result = run_league(args.env, players, games=games, seed=args.seed, out=args.out)
    print(f"{args.env}: {len(result.records)} games in {result.wall_s:.1f} s ({games} per pair per seat order)\n")
    print(format_league_table(result.table))
    best = result.table[0]["name"]
    print(f"\ntop of the table: {best}")
    if result.out is not None:
        print(f"results: {result.out / 'games.jsonl'} and {result.out / 'league.json'}")
    return result


if __name__ == "__main__":
    main()
