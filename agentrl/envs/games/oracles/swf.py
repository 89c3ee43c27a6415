"""Oracle for the ``swf`` game: a Flash movie in Ruffle, scored by pixel-region milestones.

The game's options carry the movie (``swf_url``), its milestones, its named clicks (``actions``) and a
winning sequence of them (``solution``); see :mod:`agentrl.envs.games.swf.games`. The oracle replays
``solution`` from where the game's privileged state says the player is (``solution_index``: how many
of its steps were made, in order; stray clicks do not count). The defaults play the shipped
``clicker`` movie; :func:`agentrl.envs.games.swf.games.game_options` gives the options of each shipped
game, and a user's own .swf (e.g. a FlashAdventure game from Flashpoint, see
:mod:`agentrl.envs.games.ruffle`) comes with its own milestones JSON: put the movie in
``$AGENTRL_SWF_DIR`` (served at ``/user/``) and pass ``game_options={"swf_url": "/user/<game>.swf",
"actions": {}, "solution": [], **milestones_json}`` (the options are merged over the clicker defaults).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentrl.envs.games.ruffle import ruffle_dir
from agentrl.envs.games.swf.games import game_options, games_dir, user_dir

__all__ = ["SPEC", "oracle"]

SPEC: dict[str, Any] = {
    "name": "swf",
    "env_name": "SWF",
    "title": "Flash (.swf) through Ruffle",
    "description": "A Flash movie played in Ruffle; milestones are pixel regions of the rendered frame.",
    "max_steps": 50,
    "frames_per_step": 6,
    "options": game_options("clicker"),
    "reward": "milestones",
    # Ruffle's 14 MB wasm compiles while the first page loads: calls may wait seconds on a busy machine
    "timeout_s": 45.0,
    # the page loads Ruffle before swf.js; the folders are resolved (Ruffle installed, games built) on open
    "scripts": ("/ruffle/ruffle.js",),
    "roots": {"ruffle": ruffle_dir, "swf": games_dir, "user": user_dir},
}


def oracle(state: dict[str, Any], moves: Sequence[str]) -> str:
    """The next step of the options' ``solution`` (the first move when the state has none).

    >>> state = {"solution": ["click key", "click door"], "solution_index": 1}
    >>> oracle(state, ["click key", "click door"])
    'click door'
    """
    solution = [str(m) for m in state.get("solution") or []]
    index = int(state.get("solution_index") or 0)
    if index < len(solution):
        return solution[index]
    if solution:  # the solution was played but the win did not show yet: repeat its last step
        return solution[-1]
    return moves[0] if moves else ""
