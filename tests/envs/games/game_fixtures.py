"""What the game test modules share: every registered game id, and the one page of one game a module plays on.

``tests/envs/games/test_games.py`` runs the checks every game passes over :data:`FLASHGAME_IDS`; each
``tests/test_game_<name>.py`` keeps its game's own checks on ``game = game_page("<name>")``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

import agentrl  # noqa: F401  (registers the env ids)
from agentrl.envs.games.page_driver import GamePageDriver

#: every ``AgentRL/FlashGame-*`` id in Gymnasium's registry (as Gymnasium's own tests take all its envs); when
#: none is found, one that is not registered, so that a test parametrized with them fails instead of not running
FLASHGAME_IDS: list[str] = sorted(env_id for env_id in gym.registry if env_id.startswith("AgentRL/FlashGame-")) or [
    "AgentRL/FlashGame-NoneRegistered-v0"
]


def game_of(env_id: str) -> str:
    """The game (a key of ``agentrl.envs.games.env.GAMES``) that ``env_id`` stands for."""
    if env_id not in gym.registry:
        pytest.fail(f"{env_id}: no AgentRL/FlashGame-* id is registered with Gymnasium (import agentrl)")
    return str(gym.spec(env_id).kwargs["game"])


def game_page(name: str, **kwargs: Any) -> Any:
    """A module fixture ``game``: one page of ``name`` for the module's tests (``GamePageDriver.for_tests``:
    they skip, with the reason, where Chromium or a served folder is missing)."""

    @pytest.fixture(scope="module", name="game")
    def game() -> Iterator[GamePageDriver]:
        with GamePageDriver.for_tests(name, **kwargs) as page:
            yield page

    return game
