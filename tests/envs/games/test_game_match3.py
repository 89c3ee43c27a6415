"""The Match-3 browser game: swaps, two-cell clicks, errors, out of moves, random play (all games: test_games.py)."""

from __future__ import annotations

import random

from agentrl.envs.games.oracles.match3 import SPEC, simulate
from agentrl.envs.games.page_driver import GamePageDriver
from tests.envs.games.game_fixtures import game_page

NAME = "match3"
game = game_page(NAME)


def test_spec_and_moves(game: GamePageDriver) -> None:
    assert SPEC["name"] == NAME and SPEC["env_name"] == "Match3"
    game.start(0)
    out = game.step()
    assert len(game.moves) == 8 * 7 * 2 == len(set(game.moves))
    assert "swap 0 0 right" in game.moves and "swap 6 7 down" in game.moves and "swap 7 7 right" not in game.moves
    assert out["milestones"] == ["score 300", "score 600", "score 1000", "score 1500"]
    assert out["score"] == 0 and out["reached"] == [] and not out["done"]
    assert out["state"]["legal"], "a fresh board has a legal swap"
    board = out["state"]["board"]
    assert all(simulate(board, m) == 0 for m in game.moves if m not in out["state"]["legal"])
    text = game.step(frames=0, state=False, text=True)["text"]
    assert "Score 0" in text and "moves left 30" in text


def test_click_two_cells(game: GamePageDriver) -> None:
    game.start(5)
    out = game.step()
    move = out["state"]["legal"][0]
    _, r, c, direction = move.split()
    r2, c2 = (int(r) + 1, int(c)) if direction == "down" else (int(r), int(c) + 1)
    centre = lambda rr, cc: (int(cc) * 60 + 30, 60 + int(rr) * 60 + 30)  # noqa: E731
    game.page.call(lambda p: p.mouse.click(*centre(r2, c2)))
    assert game.step()["state"]["selected"] == [r2, c2]
    game.page.call(lambda p: p.mouse.click(*centre(r, c)))
    after = game.step()
    assert after["state"]["movesLeft"] == 29 and after["score"] >= 30 and after["state"]["selected"] is None


def test_illegal_moves_change_nothing(game: GamePageDriver) -> None:
    game.start(1)
    out = game.step()
    illegal = next(m for m in game.moves if m not in out["state"]["legal"])
    for bad in [illegal, "swap 7 7 right", "jump", "swap 9 0 down"]:
        after = game.step(bad)
        assert isinstance(after["error"], str) and after["error"], bad
        assert after["state"]["board"] == out["state"]["board"]
        assert after["score"] == 0 and after["state"]["movesLeft"] == 30


def test_out_of_moves_ends_the_game(game: GamePageDriver) -> None:
    game.start(0, {"moves": 3})
    out = game.step()
    for _ in range(3):
        out = game.step(out["state"]["legal"][0])
    assert out["done"] and not out["won"]
    assert game.step(out["state"]["legal"][0])["error"] == "the game is over"


def test_random_player_usually_loses(game: GamePageDriver) -> None:
    wins = 0
    for seed in range(10):
        game.start(seed)
        out = game.step()
        rng = random.Random(seed)
        while not out["done"]:
            out = game.step(rng.choice(out["state"]["legal"]))
        wins += out["won"]
    assert wins < 5  # (4 of 10 with these seeds; the greedy oracle wins all 50 of 0..49)

