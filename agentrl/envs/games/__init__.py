"""Browser and Flash games as Gymnasium envs: ``AgentRL/FlashGame-<Game>-v0`` (see :mod:`.env`)."""

from __future__ import annotations

__all__ = ["register_game_envs"]


def register_game_envs() -> list[str]:
    """Register ``AgentRL/FlashGame-<Game>-v0`` for every game with an oracle module; returns the ids."""
    from agentrl.core.registry import register_domain
    from agentrl.envs.games.env import GAMES

    ids = []
    for spec in GAMES.values():
        ids.append(
            register_domain(
                "FlashGame",
                "agentrl.envs.games.env:make_game_env",
                variant=spec.env_name,
                description=f"{spec.title}: {spec.description}".strip(": "),
                kwargs={"game": spec.name},
                tags=("pixels", "games"),
            )
        )
    return ids
