"""SkyRL-Gym adapter: any AgentRL text env id as a SkyRL-Gym ``BaseTextEnv``.

SkyRL's generator builds one env per sample with ``skyrl_gym.make(env_class, env_config=..., extras=...)``, calls
``init(prompt)`` for the first chat messages and then ``step(llm_output)`` until ``done``, reading
``observations`` (new chat messages), ``reward`` and ``metadata``. :class:`AgentRLTextEnv` is that env for any
AgentRL text id: :func:`register_skyrl_envs` registers it as ``"agentrl"``, and each dataset row's ``extras``
(SkyRL's ``env_extras``) name the env and its task: ``{"env_id": "AgentRL/SQL-v0", "seed": 7}`` (plus
``options``, ``make_kwargs``, or ``remote`` to use an ``agentrl serve-env`` server). The same keys may sit in the
``env_config`` (SkyRL's ``environment.skyrl_gym.agentrl`` section) as defaults for every row.

The reward is the AgentRL env's, at the step it is given (so the episode's return is the same as in
``agentrl bench``); ``metadata`` is the step's ``info``. When the episode ends, ``observations`` is empty, as
SkyRL's own envs do.

Needs ``pip install 'agentrl-gym[skyrl]'``.

>>> import skyrl_gym
>>> register_skyrl_envs()
>>> env = skyrl_gym.make("agentrl", env_config={}, extras={"env_id": "AgentRL/SQL-v0", "seed": 0})
>>> prompt, info = env.init([])
>>> prompt[0]["role"], prompt[0]["content"].startswith("Database schema")
('user', True)
>>> out = env.step(env.env.unwrapped.oracle_action())
>>> out["reward"], out["done"], out["observations"]
(1.0, True, [])
>>> env.close()
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentrl.core.errors import DependencyNotInstalled
from agentrl.core.serialize import json_safe
from agentrl.integrations._text_env import make_text_env

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise DependencyNotInstalled("skyrl-gym", extra="skyrl") from exc

__all__ = ["ENV_CLASS", "AgentRLTextEnv", "play_episode", "register_skyrl_envs"]

ENV_CLASS = "agentrl"
"""The name SkyRL's config gives as ``env_class`` (``register_skyrl_envs``'s default)."""


def _setting(extras: Mapping[str, Any], config: Mapping[str, Any], key: str, default: Any = None) -> Any:
    return extras[key] if key in extras else config.get(key, default)


class AgentRLTextEnv(BaseTextEnv):  # type: ignore[misc]
    """One AgentRL text env episode in SkyRL-Gym's interface (see the module docstring).

    Args:
        env_config: defaults for every row: ``env_id``, ``make_kwargs``, ``remote``, ``seed``, ``options``.
        extras: the row's own values of the same keys (they win).

    Raises:
        ValueError: no ``env_id``, or an env that is not text in and text out.
    """

    def __init__(self, env_config: Mapping[str, Any] | None = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        config = dict(env_config or {})
        row = dict(extras or {})
        env_id = _setting(row, config, "env_id")
        if not env_id:
            raise ValueError(
                'AgentRLTextEnv needs an env_id: put {"env_id": "AgentRL/SQL-v0"} in the row\'s extras '
                "(env_extras) or in environment.skyrl_gym.agentrl"
            )
        make_kwargs = {**dict(config.get("make_kwargs") or {}), **dict(row.get("make_kwargs") or {})}
        self.env_id = str(env_id)
        self.env = make_text_env(self.env_id, make_kwargs, _setting(row, config, "remote"), engine="SkyRL-Gym")
        self.seed = _setting(row, config, "seed")
        self.options = _setting(row, config, "options")
        self.max_turns = int(getattr(self.env.unwrapped, "max_turns", 1))
        self.episode_return = 0.0
        self.last_info: dict[str, Any] = {}

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """The row's prompt (a system message, say) followed by the env's first observation as a user message."""
        observation, info = self.env.reset(seed=self.seed, options=self.options)
        self.turns, self.episode_return, self.last_info = 0, 0.0, dict(info)
        return [*list(prompt or []), {"role": "user", "content": str(observation)}], json_safe(info)

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """One turn: the LLM's output is the env's action."""
        observation, reward, terminated, truncated, info = self.env.step(str(action))
        self.turns += 1
        self.episode_return += float(reward)
        self.last_info = dict(info)
        done = bool(terminated or truncated)
        messages = [] if done else [{"role": "user", "content": str(observation)}]
        return BaseTextEnvStepOutput(
            observations=messages, reward=float(reward), done=done, metadata=json_safe(info), postprocessed_action=None
        )

    def get_metrics(self) -> dict[str, Any]:
        """The episode's return, turns and why it ended (SkyRL logs these per env class)."""
        return {
            "return": self.episode_return,
            "turns": self.turns,
            "solved": float(self.last_info.get("done_reason") not in (None, "max_turns") and self.episode_return > 0),
        }

    def close(self) -> None:
        """Close the AgentRL env (its sandbox, or the remote session)."""
        self.env.close()


def register_skyrl_envs(name: str = ENV_CLASS) -> None:
    """Register :class:`AgentRLTextEnv` with SkyRL-Gym as ``name`` (idempotent)."""
    if name not in skyrl_gym.envs.registration.registry:
        skyrl_gym.register(id=name, entry_point="agentrl.integrations.skyrl:AgentRLTextEnv")


def play_episode(env: Any, policy: Any, prompt: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """One episode as SkyRL's generator plays it: ``init(prompt)``, then ``step`` the policy's output until ``done``.

    ``policy(env, chat) -> str`` stands in for the model. Returns ``{"return", "turns", "chat"}``, the chat being
    what the model saw and wrote (the assistant's outputs and the env's ``observations`` appended in turn).
    """
    chat, _ = env.init(list(prompt or []))
    total, done, turns = 0.0, False, 0
    while not done:
        output = policy(env, chat)
        step = env.step(output)
        total += float(step["reward"])
        done = bool(step["done"])
        chat = [*chat, {"role": "assistant", "content": output}, *step["observations"]]
        turns += 1
    return {"return": total, "turns": turns, "chat": chat}
