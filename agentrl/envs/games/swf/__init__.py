"""Flash (.swf) support: a small SWF/AVM1 writer and the project's own Flash games built with it.

The games run in Ruffle (see :mod:`agentrl.envs.games.ruffle`) through the ``swf`` browser game.
"""

from __future__ import annotations

from agentrl.envs.games.swf.games import GAMES, build_games, game_bytes, game_options, milestones
from agentrl.envs.games.swf.writer import Asm, Movie

__all__ = ["GAMES", "Asm", "Movie", "build_games", "game_bytes", "game_options", "milestones"]
