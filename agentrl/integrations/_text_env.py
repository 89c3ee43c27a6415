"""The env an engine adapter plays: an AgentRL id made in process or on a ``serve-env`` server, checked to be text.

SkyRL-Gym, verl and verifiers all hand the model's reply to ``env.step`` as a string, and SkyRL and verifiers
send the observation back as a chat message; an env that is not text there is refused at once, with the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

__all__ = ["make_text_env"]


def make_text_env(
    env_id: str,
    make_kwargs: Mapping[str, Any] | None = None,
    remote: str | None = None,
    *,
    engine: str,
    text_observations: bool = True,
) -> gym.Env[Any, Any]:
    """``gym.make(env_id, **make_kwargs)`` (with ``remote=`` when given), refused unless its actions are text.

    Args:
        env_id: a registered id.
        make_kwargs: arguments to ``gym.make``.
        remote: an ``agentrl serve-env`` URL: the env's episodes run there.
        engine: the adapter's name, for the error message.
        text_observations: refuse an env whose observations are not text either.

    Raises:
        ValueError: the env is not text where ``engine`` needs it; the message names the fix.

    >>> env = make_text_env("AgentRL/FlashGame-Catch-v0", engine="SkyRL-Gym")
    Traceback (most recent call last):
    ...
    ValueError: AgentRL/FlashGame-Catch-v0 is not text in, text out (observations Box(0, 255, (84, 84, 3), uint8), \
actions Discrete(3)), and SkyRL-Gym sends the model's text to the env and its observation to the model. Pick a text \
env (`agentrl list`), or an env's text action mode via make_kwargs (e.g. {"action_mode": "text"})
    """
    import agentrl  # noqa: F401  (registers the ids)

    kwargs = dict(make_kwargs or {})
    if remote:
        kwargs["remote"] = remote
    env = gym.make(env_id, **kwargs)
    needs = [env.action_space] + ([env.observation_space] if text_observations else [])
    if not all(isinstance(space, gym.spaces.Text) for space in needs):
        env.close()
        what = "sends the model's text to the env and its observation to the model" if text_observations else (
            "writes text actions"
        )
        raise ValueError(
            f"{env_id} is not text in, text out (observations {env.observation_space}, actions {env.action_space}), "
            f"and {engine} {what}. Pick a text env (`agentrl list`), or an env's text action mode via make_kwargs "
            '(e.g. {"action_mode": "text"})'
        )
    return env
