"""The Memory browser game: layouts, mismatches, errors, the flip limit (every game's checks: test_games.py)."""

from __future__ import annotations

from agentrl.envs.games.oracles.memory import SPEC
from agentrl.envs.games.page_driver import GamePageDriver
from tests.envs.games.game_fixtures import game_page

NAME = "memory"
game = game_page(NAME)


def test_spec_and_moves(game: GamePageDriver) -> None:
    assert SPEC["name"] == NAME and SPEC["env_name"] == "Memory"
    game.start(0)
    out = game.step()
    assert game.moves == [f"flip {i}" for i in range(16)]
    assert out["milestones"] == ["2 pairs", "4 pairs", "6 pairs", "8 pairs"]
    assert sorted(out["state"]["layout"]) == sorted(list(range(8)) * 2)
    assert out["score"] == 0 and not out["done"]
    text = game.step(frames=0, state=False, text=True)["text"]
    assert "??" in text and "flips left 40" in text
    game.start(0, {"pairs": 12})
    out = game.step()
    assert len(out["state"]["layout"]) == 24 and out["milestones"] == ["3 pairs", "6 pairs", "9 pairs", "12 pairs"]


def test_mismatch_turns_back_and_errors(game: GamePageDriver) -> None:
    game.start(4)
    out = game.step()
    layout = out["state"]["layout"]
    a = 0
    b = next(i for i in range(1, 16) if layout[i] != layout[a])
    partner = next(i for i in range(1, 16) if layout[i] == layout[a])
    out = game.step(f"flip {a}")
    again = game.step(f"flip {a}")  # the face-up first card of this turn
    assert isinstance(again["error"], str) and again["state"] == out["state"]
    out = game.step(f"flip {b}")
    assert out["state"]["open"] == [a, b] and out["score"] == 0  # a mismatch stays visible
    c = next(i for i in range(16) if i not in (a, b, partner))
    out = game.step(f"flip {c}")
    assert out["state"]["open"] == [c]  # ... until the next flip turns it back
    out = game.step(f"flip {next(i for i in range(16) if i != c and layout[i] == layout[c])}")
    assert out["score"] == 1 and out["state"]["open"] == []
    for bad in [f"flip {c}", "flip 16", "flip", "peek 3"]:
        after = game.step(bad)
        assert isinstance(after["error"], str) and after["error"], bad
        assert after["state"] == out["state"]


def test_flip_limit_ends_the_game(game: GamePageDriver) -> None:
    game.start(0, {"flips": 4})
    out = game.step()
    layout = out["state"]["layout"]
    wrong = next(i for i in range(1, 16) if layout[i] != layout[0])
    for move in ["flip 0", f"flip {wrong}", "flip 0", f"flip {wrong}"]:
        out = game.step(move)
        assert out["error"] is None
    assert out["done"] and not out["won"] and out["state"]["flipsLeft"] == 0
    assert game.step("flip 1")["error"] == "the game is over"


def test_layouts_differ_by_seed(game: GamePageDriver) -> None:
    layouts = []
    for seed in (7, 8):
        game.start(seed)
        layouts.append(game.step()["state"]["layout"])
    assert layouts[0] != layouts[1]

