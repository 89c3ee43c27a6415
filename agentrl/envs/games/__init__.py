"""Browser and Flash games as Gymnasium envs: ``AgentRL/FlashGame-<Game>-v0`` (see :mod:`.env`).

One file per job (the game's score is the reward, so there is no separate verifier or task file):

* ``env.py``: :class:`~agentrl.envs.games.env.BrowserGameEnv`, its Gymnasium-style docstring, and ``GAMES``, every
  game's :class:`~agentrl.envs.games.env.GameSpec` (read from its oracle module's ``SPEC``);
* ``browser.py``: the browser sandbox, one headless Chromium per process and one page per env
  (:class:`~agentrl.envs.games.browser.GamePage`);
* ``page_driver.py``: :class:`~agentrl.envs.games.page_driver.GamePageDriver`, one game's page driven through the
  runtime's ``AgentRL`` object without the env, for game authors and the per-game tests;
* ``assets/``: ``runtime.js`` (the virtual clock and the ``AgentRL`` object every game speaks) and the games;
* ``oracles/``: one module per game, its settings (``SPEC``) and its scripted expert (``oracle``);
* ``ruffle.py``: Ruffle, the Flash Player emulator; ``swf/``: a small SWF writer and our own Flash games;
* ``vlm_judge.py``: a VLM judge of a milestone in a screenshot (FlashAdventure's CUA-as-a-judge).

:func:`register_game_envs` registers one id per game; :mod:`agentrl.envs` calls it.
"""

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
