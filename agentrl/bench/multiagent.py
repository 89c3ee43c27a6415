"""League benchmarks for the turn-based games: what ``agentrl league`` runs.

A league is a round robin (:meth:`~agentrl.bench.league.League.play_round_robin`):
every pair of players plays ``games`` games in each seat order, Elo is updated after each game, and
the table gives each player's Elo and win/draw/loss rates with Wilson intervals. Players are
built-in ones by name (``random``, ``scripted``, ``minimax``, ``module:Class``) and, optionally, one
agent from the agent registry (``--agent react --backend smollm2``), which plays through
:func:`~agentrl.bench.league.play_game` like every other player: it is bound to a
:class:`~agentrl.envs.multiagent.opponents.PlayerView` of its seat, whose ``unwrapped.system_prompt``
holds the game's rules, and it answers each observation with a move in text.

Output files (``out``): ``games.jsonl`` (one :class:`GameRecord` a line) and ``league.json``
(configuration, table, final Elo).

>>> result = run_league("tictactoe_v0", ["random", "minimax"], games=1, seed=0)
>>> [row["name"] for row in result.table]
['minimax', 'random']
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrl.bench.league import GameRecord, League
from agentrl.envs.multiagent.opponents import make_player

__all__ = ["LeagueResult", "format_league_table", "run_league"]


@dataclass
class LeagueResult:
    """A finished league: its table (best first), every game, and where the files went."""

    env: str
    table: list[dict[str, Any]]
    records: list[GameRecord]
    wall_s: float
    out: Path | None = None
    config: dict[str, Any] = field(default_factory=dict)


def run_league(
    env: str,
    players: Sequence[str],
    *,
    games: int = 20,
    seed: int = 0,
    agent: Any = None,
    agent_name: str | None = None,
    env_kwargs: dict[str, Any] | None = None,
    k: float = 16.0,
    out: str | Path | None = None,
    on_game: Callable[[GameRecord], Any] | None = None,
    transcript: bool = False,
) -> LeagueResult:
    """Play a round robin between ``players`` (and ``agent``) on a turn-based game.

    Args:
        env: a two-player ``aec`` name from ``MULTIAGENT_ENVS`` (``"tictactoe_v0"``).
        players: built-in player names (see :func:`~agentrl.envs.multiagent.opponents.make_player`).
        games: games per pair per seat order.
        seed: game ``i`` is seeded ``seed + i``; players are seeded from it too.
        agent: an extra player (an agent object, or a zero-argument factory of one).
        agent_name: its name in the table (default: ``agent.name``).
        env_kwargs: keyword arguments of the game's ``env()``.
        k: the Elo K factor.
        out: a directory for ``games.jsonl`` and ``league.json`` (none written when ``None``).
        on_game: called with each finished game.
        transcript: keep every move's text in the records.
    """
    from agentrl.envs.multiagent import MULTIAGENT_ENVS, load

    kind = MULTIAGENT_ENVS[env][0] if env in MULTIAGENT_ENVS else "aec"
    if kind != "aec":
        raise ValueError(f"{env} is a {kind} env; a league needs a two-player turn-based (aec) game")
    try:
        module = load(env)  # a ValueError naming the choices for an unknown name
    except ModuleNotFoundError as exc:
        raise ValueError(f"the {env} env cannot be imported: {exc}") from exc
    if games < 1:
        raise ValueError(f"games must be at least 1, got {games}")
    kwargs = dict(env_kwargs or {})

    def env_fn() -> Any:
        return module.env(**kwargs)

    league = League(k=k)
    for index, name in enumerate(players):
        if name in league.entries:
            raise ValueError(f"player {name!r} is listed twice")
        league.add(name, lambda name=name, index=index: make_player(name, seed=seed + index))
    if agent is not None:
        factory = agent if callable(agent) and not hasattr(agent, "act") else (lambda: agent)
        built = factory()
        label = agent_name or str(getattr(built, "name", "agent"))
        if label in league.entries:
            label = f"{label} (agent)"
        league.add(label, lambda: built)
    if len(league.entries) < 2:
        raise ValueError("a league needs at least two players (give more --players, or an --agent)")
    started = time.perf_counter()
    records = league.play_round_robin(env_fn, games, seed, on_game=on_game, transcript=transcript)
    wall_s = time.perf_counter() - started
    config = {"env": env, "env_kwargs": kwargs, "players": league.names, "games_per_pair_per_seat": games,
              "seed": seed, "elo_k": k}  # fmt: skip
    result = LeagueResult(env=env, table=league.table(), records=records, wall_s=wall_s, config=config)
    if out is not None:
        result.out = _write(Path(out), result)
    return result


def _jsonable_row(row: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in row.items():
        if hasattr(value, "estimate"):
            data[key] = {"estimate": _num(value.estimate), "low": _num(value.low), "high": _num(value.high),
                         "confidence": value.confidence}  # fmt: skip
        else:
            data[key] = _num(value) if isinstance(value, float) else value
    return data


def _num(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 6)


def _write(out: Path, result: LeagueResult) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "games.jsonl").open("w", encoding="utf-8") as handle:
        for record in result.records:
            handle.write(json.dumps(record.to_dict(), default=str) + "\n")
    summary = {
        "config": result.config,
        "wall_s": round(result.wall_s, 3),
        "games": len(result.records),
        "table": [_jsonable_row(row) for row in result.table],
        "elo": {row["name"]: round(row["elo"], 2) for row in result.table},
    }
    (out / "league.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return out


def format_league_table(table: Sequence[dict[str, Any]]) -> str:
    """The league table as text: Elo, games, and win/draw/loss rates with their 95% intervals."""

    def rate(interval: Any) -> str:
        if math.isnan(interval.estimate):
            return "-"
        return f"{interval.estimate:.2f} [{interval.low:.2f}, {interval.high:.2f}]"

    def fit(row: Mapping[str, Any]) -> str:
        interval = row.get("elo_fit")
        if interval is None or math.isnan(interval.estimate):
            return "-"
        return f"{interval.estimate:.0f} [{interval.low:.0f}, {interval.high:.0f}]"

    width = max([len("player"), *(len(row["name"]) for row in table)])
    header = (
        f"{'player':<{width}}  {'elo':>6}  {'fitted elo [95% CI]':<20}  {'games':>5}  {'win [95% CI]':<18}  "
        f"{'draw [95% CI]':<18}  loss [95% CI]"
    )
    lines = [header, "-" * len(header)]
    for row in table:
        lines.append(
            f"{row['name']:<{width}}  {row['elo']:>6.0f}  {fit(row):<20}  {row['games']:>5}  "
            f"{rate(row['win_rate']):<18}  {rate(row['draw_rate']):<18}  {rate(row['loss_rate'])}"
        )
    reference = next((row["name"] for row in table if row.get("elo_reference")), None)
    if reference is not None:
        lines.append(f"elo: the running Elo; fitted elo: Bradley-Terry over all games, {reference} held at its "
                     "rating, 95% bootstrap interval over games")
    return "\n".join(lines)
