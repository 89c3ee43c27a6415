"""Stable-Baselines3 adapter: text envs as ``Box`` observations and ``Discrete`` actions.

SB3 policies need array observations and a ``Box``/``Discrete`` action space. :func:`make_sb3_env`
stacks :class:`~agentrl.wrappers.TextToEmbedding` (MiniLM vectors) and
:class:`~agentrl.wrappers.DiscreteChoices` on any AgentRL env id; :func:`make_sb3_vec_env` builds
``n_envs`` copies as one SB3 ``VecEnv`` that embeds all their observations in one model call per
step (the fast way to train: MiniLM is most of the cost); :func:`evaluate` plays episodes
with a trained model, a plain policy function or ``"random"`` and reports the mean reward and, for
games, win/draw/loss rates.

Needs ``pip install 'agentrl-gym[sb3,search]'`` (``stable-baselines3`` for training; the MiniLM
model for the embeddings).

>>> env = make_sb3_env("AgentRL-MA/tictactoe-vs-random-v0", choices=[f"[{i}]" for i in range(1, 10)])
>>> env.observation_space.shape, env.action_space
((384,), Discrete(9))
>>> stats = evaluate("random", env, episodes=4, seed=0)
>>> sorted(stats)
['draw_rate', 'episodes', 'loss_rate', 'mean_length', 'mean_reward', 'std_reward', 'win_rate']
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from agentrl.core.errors import DependencyNotInstalled
from agentrl.wrappers.discrete_choices import DiscreteChoices
from agentrl.wrappers.text_to_embedding import TextEmbedder, TextToEmbedding

try:
    from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv
except ImportError as _exc:  # pragma: no cover - depends on the install
    raise DependencyNotInstalled("stable-baselines3", extra="sb3") from _exc

__all__ = ["EmbeddingVecEnv", "evaluate", "make_sb3_env", "make_sb3_vec_env", "random_policy"]


def make_sb3_env(
    env_id: str,
    *,
    choices: Sequence[str] | None = None,
    embed: bool = True,
    n_choices: int | None = None,
    model: Any = None,
    cache_size: int = 10_000,
    **kwargs: Any,
) -> gym.Env[Any, Any]:
    """``gym.make(env_id, **kwargs)`` wrapped for SB3: ``DiscreteChoices`` then ``TextToEmbedding``.

    Args:
        env_id: a registered id, e.g. ``"AgentRL-MA/tictactoe-vs-random-v0"``.
        choices: fixed text moves (action ``i`` plays ``choices[i]``); ``None`` indexes the env's
            ``info["legal_moves"]`` (see :class:`~agentrl.wrappers.DiscreteChoices`).
        embed: embed text observations with MiniLM (``Box(384,)``); ``False`` leaves them as they
            are, for your own observation wrapper.
        n_choices: the action-space size with ``choices=None``; ``None`` reads it from the number of
            legal moves after a first ``reset(seed=0)`` (right for games whose opening has the most
            moves, such as tic-tac-toe).
        model: the embedding model for :class:`~agentrl.wrappers.TextToEmbedding` (default MiniLM);
            pass a :class:`~agentrl.wrappers.TextEmbedder` to share one cache between envs.
        cache_size: the embedding cache size.
        **kwargs: passed to ``gym.make`` (env arguments, ``max_episode_steps``, ...).
    """
    env = gym.make(env_id, **kwargs)
    if choices is None and n_choices is None:
        _, info = env.reset(seed=0)
        moves = info.get("legal_moves")
        if not moves:
            env.close()
            raise ValueError(
                f"{env_id} proposes no info['legal_moves'] after reset; pass choices=[...] (the text of each "
                "discrete action) or n_choices="
            )
        n_choices = len(moves)
    wrapped: gym.Env[Any, Any] = DiscreteChoices(env, choices, n=n_choices)
    if embed:
        wrapped = TextToEmbedding(wrapped, model=model, cache_size=cache_size)
    return wrapped


def make_sb3_vec_env(
    env_id: str,
    n_envs: int = 8,
    *,
    choices: Sequence[str] | None = None,
    n_choices: int | None = None,
    model: Any = None,
    cache_size: int = 10_000,
    **kwargs: Any,
) -> EmbeddingVecEnv:
    """``n_envs`` copies of ``make_sb3_env(env_id, embed=False, ...)`` as one batched-embedding VecEnv.

    Arguments as for :func:`make_sb3_env`; ``model`` may be a :class:`~agentrl.wrappers.TextEmbedder`
    shared with evaluation envs (one cache for all).

    >>> venv = make_sb3_vec_env("AgentRL-MA/tictactoe-vs-random-v0", 2, choices=[f"[{i}]" for i in range(1, 10)])
    >>> venv.reset().shape
    (2, 384)
    >>> venv.close()
    """
    if isinstance(n_envs, bool) or not isinstance(n_envs, int) or n_envs < 1:
        raise ValueError(f"n_envs must be an int >= 1, got {n_envs!r}")
    embedder = model if isinstance(model, TextEmbedder) else TextEmbedder(model, cache_size)

    def make() -> gym.Env[Any, Any]:
        return make_sb3_env(env_id, choices=choices, embed=False, n_choices=n_choices, **kwargs)

    return EmbeddingVecEnv([make] * n_envs, embedder)


class EmbeddingVecEnv(DummyVecEnv):
    """SB3's ``DummyVecEnv`` over text envs, embedding every step's observations in one batch.

    The envs step one after another (as in ``DummyVecEnv``); their text observations (and the
    ``terminal_observation`` of finished episodes) are embedded together with ``embedder``, so
    the model runs once per vector step instead of once per env.

    Args:
        env_fns: functions that each make a new text env with a ``Discrete``/``Box`` action space.
        embedder: the :class:`~agentrl.wrappers.TextEmbedder`.
    """

    def __init__(self, env_fns: list[Callable[[], gym.Env[Any, Any]]], embedder: TextEmbedder) -> None:
        self.envs = [fn() for fn in env_fns]
        if len({id(env.unwrapped) for env in self.envs}) != len(self.envs):
            raise ValueError("env_fns returned the same env twice; each must make a new env")
        self.embedder = embedder
        first = self.envs[0]
        box = spaces.Box(low=-1.0, high=1.0, shape=(embedder.dimension,), dtype=np.float32)
        VecEnv.__init__(self, len(self.envs), box, first.action_space)
        self.keys = [None]
        self._texts = [""] * self.num_envs
        self.buf_obs = {}
        self.buf_dones = np.zeros((self.num_envs,), dtype=bool)
        self.buf_rews = np.zeros((self.num_envs,), dtype=np.float32)
        self.buf_infos = [{} for _ in range(self.num_envs)]
        self.metadata = first.metadata

    def _save_obs(self, env_idx: int, obs: Any) -> None:
        if not isinstance(obs, str):
            raise TypeError(f"EmbeddingVecEnv needs str observations, got {type(obs).__name__}")
        self._texts[env_idx] = obs

    def _obs_from_buf(self) -> np.ndarray:
        return self.embedder.embed(self._texts).copy()

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """Step every env, then embed the new and the terminal observations in one batch."""
        observations, rewards, dones, infos = super().step_wait()
        ended = [i for i, info in enumerate(infos) if isinstance(info.get("terminal_observation"), str)]
        if ended:
            vectors = self.embedder.embed([infos[i]["terminal_observation"] for i in ended])
            for i, vector in zip(ended, vectors, strict=True):
                infos[i]["terminal_observation"] = vector.copy()
        return observations, rewards, dones, infos


def random_policy(action_space: gym.Space[Any], seed: int | None = None) -> Callable[[Any], Any]:
    """A policy that samples ``action_space`` uniformly (seeded), ignoring the observation.

    >>> policy = random_policy(gym.spaces.Discrete(9), seed=0)
    >>> 0 <= int(policy(None)) < 9
    True
    """
    space = copy.deepcopy(action_space)  # a private copy: the env's space RNG is left alone
    space.seed(seed)
    return lambda _observation: space.sample()


def evaluate(
    model_or_policy: Any,
    env: gym.Env[Any, Any],
    episodes: int = 100,
    seed: int = 0,
    *,
    deterministic: bool = True,
    max_steps: int = 10_000,
) -> dict[str, float]:
    """Play ``episodes`` episodes (reset seeds ``seed``, ``seed + 1``, ...) and summarise them.

    Args:
        model_or_policy: an SB3 model (anything with ``predict(obs, deterministic=...)``), a function
            ``observation -> action``, or ``"random"`` (uniform over ``env.action_space``, seeded).
        env: the env (as :func:`make_sb3_env` builds it).
        episodes: how many episodes.
        seed: the first reset seed (the game views alternate seats with the seed's parity).
        deterministic: passed to ``predict``.
        max_steps: a guard against an episode that never ends.

    Returns:
        ``episodes``, ``mean_reward``, ``std_reward``, ``mean_length``, and for games (envs whose
        final ``info`` has ``result``: ``"win"``, ``"draw"`` or ``"loss"``) ``win_rate``,
        ``draw_rate`` and ``loss_rate``.
    """
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be an int >= 1, got {episodes!r}")
    if isinstance(model_or_policy, str):
        if model_or_policy != "random":
            raise ValueError(f"the only named policy is 'random', got {model_or_policy!r}")
        act: Callable[[Any], Any] = random_policy(env.action_space, seed)
    elif callable(getattr(model_or_policy, "predict", None)):
        model = model_or_policy

        def act(observation: Any) -> Any:
            action, _ = model.predict(observation, deterministic=deterministic)
            return action

    elif callable(model_or_policy):
        act = model_or_policy
    else:
        raise TypeError(f"expected an SB3 model, a policy function or 'random', got {type(model_or_policy).__name__}")

    returns, lengths, results = [], [], []
    for episode in range(episodes):
        observation, info = env.reset(seed=seed + episode)
        total, steps, done = 0.0, 0, False
        while not done:
            observation, reward, terminated, truncated, info = env.step(act(observation))
            total += float(reward)
            steps += 1
            done = terminated or truncated
            if steps >= max_steps and not done:
                raise RuntimeError(f"episode {episode} did not end within max_steps={max_steps}")
        returns.append(total)
        lengths.append(steps)
        results.append(info.get("result"))
    stats = {
        "episodes": float(episodes),
        "mean_reward": float(np.mean(returns)),
        "std_reward": float(np.std(returns)),
        "mean_length": float(np.mean(lengths)),
    }
    if any(r is not None for r in results):
        for outcome in ("win", "draw", "loss"):
            stats[f"{outcome}_rate"] = sum(r == outcome for r in results) / episodes
    return stats
