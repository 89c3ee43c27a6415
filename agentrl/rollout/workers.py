"""Where envs run during a rollout: one :class:`EnvWorker` per env, made by a :class:`WorkerFactory`.

The engine only ever awaits a worker's ``reset``/``step``; how the env runs behind them is the
factory's choice:

* :class:`ThreadWorkers` (default): the env lives in this process and its calls run in a thread
  pool (or natively when the env has ``areset``/``astep`` coroutines), so a slow sandbox call never
  blocks generation. A hung call cannot be killed; the worker is abandoned and its thread leaks
  (a daemon thread: at exit it gets a few seconds, then the process exits without it).
* :class:`~agentrl.rollout.process_workers.ProcessWorkers`: each env in its own child process;
  a hung env is killed.
* :class:`~agentrl.rollout.ray_workers.RayWorkers`: each env in a Ray actor, on any node of a
  Ray cluster; a hung env's actor is killed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

import gymnasium as gym

from agentrl.rollout.daemon_pool import DaemonThreadPool

__all__ = [
    "EnvFactory",
    "EnvWorker",
    "StepResult",
    "ThreadWorkers",
    "TrackedWorkers",
    "WorkerFactory",
    "describe_env",
    "text_action_problem",
]

#: A zero-argument callable that builds one env (``functools.partial(gym.make, "AgentRL/SQL-v0")``).
EnvFactory = Callable[[], gym.Env[Any, Any]]
_W = TypeVar("_W")

#: ``(observation, reward, terminated, truncated, info)``, as ``env.step`` returns it.
StepResult = tuple[Any, float, bool, bool, dict[str, Any]]


def describe_env(env: gym.Env[Any, Any]) -> dict[str, Any]:
    """What an LLM policy needs to know about an env: its system prompt, stop sequences, and whether it takes text.

    ``action_problem`` is ``None`` when the env's actions are text, else why an LLM policy cannot act in it,
    with the fix (:func:`text_action_problem`).

    Example:
        >>> from agentrl.rollout.workloads import InstantEnv
        >>> describe_env(InstantEnv())
        {'system_prompt': '', 'stop_sequences': (), 'action_problem': None}
    """
    base = env.unwrapped
    return {
        "system_prompt": str(getattr(base, "system_prompt", "") or ""),
        "stop_sequences": tuple(str(s) for s in (base.metadata.get("stop_sequences") or ())),
        "action_problem": text_action_problem(env),
    }


def text_action_problem(env: gym.Env[Any, Any]) -> str | None:
    """Why an LLM policy, which writes text, cannot act in ``env``, naming the fix; ``None`` when it can.

    An env whose ``action_space`` is a :class:`gymnasium.spaces.Text` (or that declares none) takes text.
    Where the env's class has an ``action_mode`` argument (the games: ``"discrete"`` for SB3, ``"text"`` for
    LLMs), the message names that setting.

    Example:
        >>> import gymnasium as gym
        >>> print(text_action_problem(gym.make("CartPole-v1")))  # doctest: +NORMALIZE_WHITESPACE
        the env's actions are Discrete(2), not text: an LLM policy writes text. Use an env (or a wrapper)
        whose action_space is a gymnasium.spaces.Text.
    """
    space = getattr(env, "action_space", None)
    if space is None or isinstance(space, gym.spaces.Text):
        return None
    problem = f"the env's actions are {space}, not text: an LLM policy writes text."
    try:
        parameters = inspect.signature(type(env.unwrapped).__init__).parameters
    except (TypeError, ValueError):
        parameters = {}  # type: ignore[assignment]
    if "action_mode" in parameters:
        return (
            f"{problem} This env has a text action mode: pass action_mode='text' "
            "(on the command line: --env-kwarg action_mode=text)."
        )
    return f"{problem} Use an env (or a wrapper) whose action_space is a gymnasium.spaces.Text."


@runtime_checkable
class EnvWorker(Protocol):
    """One env, driven asynchronously. ``start`` first; ``close`` is idempotent."""

    system_prompt: str
    stop_sequences: tuple[str, ...]
    #: ``None`` when the env takes text actions, else why an LLM policy cannot act in it (:func:`text_action_problem`).
    action_problem: str | None

    async def start(self) -> None:
        """Build the env and read :func:`describe_env` into the attributes."""
        ...

    async def reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        """``env.reset(seed=seed, options=options)``."""
        ...

    async def step(self, action: str) -> StepResult:
        """``env.step(action)``."""
        ...

    def abandon(self) -> None:
        """Stop using this env after a hang or crash: kill it where possible, never wait for it."""
        ...

    async def close(self) -> None:
        """Close the env and free the worker."""
        ...


@runtime_checkable
class WorkerFactory(Protocol):
    """Makes workers; ``shutdown`` frees whatever the factory holds (threads, processes, Ray)."""

    def make(self) -> EnvWorker:
        """A new, not yet started worker."""
        ...

    def shutdown(self) -> None:
        """Free the factory's resources; idempotent."""
        ...


class ThreadWorker:
    """An env in this process; blocking calls go to a thread pool, ``astep``/``areset`` run natively."""

    def __init__(self, env_fn: EnvFactory, executor: concurrent.futures.Executor) -> None:
        self._env_fn = env_fn
        self._executor = executor
        self._env: gym.Env[Any, Any] | None = None
        self.system_prompt = ""
        self.stop_sequences: tuple[str, ...] = ()
        self.action_problem: str | None = None

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(*args, **kwargs))

    async def start(self) -> None:
        """Build the env in the pool (construction may start sandboxes)."""
        self._env = await self._call(self._env_fn)
        description = describe_env(self._env)
        self.system_prompt = description["system_prompt"]
        self.stop_sequences = description["stop_sequences"]
        self.action_problem = description["action_problem"]

    def _require_env(self) -> gym.Env[Any, Any]:
        if self._env is None:
            raise RuntimeError("the worker is not started (or was closed); await start() first")
        return self._env

    async def reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        """Reset the env (its ``areset`` coroutine when it has one)."""
        env = self._require_env()
        areset = getattr(env, "areset", None)
        if areset is not None and inspect.iscoroutinefunction(areset):
            return await areset(seed=seed, options=options)
        return await self._call(env.reset, seed=seed, options=options)

    async def step(self, action: str) -> StepResult:
        """Step the env (its ``astep`` coroutine when it has one)."""
        env = self._require_env()
        astep = getattr(env, "astep", None)
        if astep is not None and inspect.iscoroutinefunction(astep):
            return await astep(action)
        return await self._call(env.step, action)

    def abandon(self) -> None:
        """Forget the env; a call still running in its thread finishes (or hangs) on its own."""
        env, self._env = self._env, None
        if env is not None:
            # Close it in the pool, after whatever is running there; never wait for it here.
            self._executor.submit(_close_quietly, env)

    async def close(self) -> None:
        """Close the env in the pool."""
        env, self._env = self._env, None
        if env is not None:
            await self._call(_close_quietly, env)


def _close_quietly(env: gym.Env[Any, Any]) -> None:
    try:
        env.close()
    except Exception:  # a broken env must not break the engine's shutdown
        pass


class ThreadWorkers:
    """Workers whose envs run in this process, their blocking calls in a shared thread pool.

    Args:
        env_fn: builds one env.
        max_threads: the pool size (at least the number of concurrent envs, so that no env waits
            for another's thread).
    """

    def __init__(self, env_fn: EnvFactory, max_threads: int = 64) -> None:
        if not callable(env_fn):
            raise TypeError(f"env_fn must be a callable that builds an env, got {env_fn!r}")
        self.env_fn = env_fn
        # Daemon threads: a hung call of an abandoned env must not keep the process from exiting.
        self._executor = DaemonThreadPool(max_threads, thread_name_prefix="agentrl-env")

    def make(self) -> ThreadWorker:
        """A new worker sharing the pool."""
        return ThreadWorker(self.env_fn, self._executor)

    def shutdown(self) -> None:
        """Stop the pool without waiting for hung calls."""
        self._executor.shutdown(wait=False, cancel_futures=True)


class TrackedWorkers:
    """The bookkeeping of factories whose workers hold processes or actors: every live worker is known.

    Workers are held strongly (a worker the caller dropped must still be killed at shutdown); a
    worker forgets itself through the ``_release`` callback it is given when it closes or is abandoned.
    """

    def __init__(self) -> None:
        self._workers: set[Any] = set()
        self._workers_lock = threading.Lock()

    def _track(self, worker: _W) -> _W:
        worker._release = functools.partial(self._forget, worker)  # type: ignore[attr-defined]
        with self._workers_lock:
            self._workers.add(worker)
        return worker

    def _forget(self, worker: Any) -> None:
        with self._workers_lock:
            self._workers.discard(worker)

    def live(self) -> list[Any]:
        """The workers made and not yet released (``node_id`` on Ray workers says where each runs)."""
        with self._workers_lock:
            return list(self._workers)

    def _take_all(self) -> list[Any]:
        """Every worker still tracked; the factory stops tracking them."""
        with self._workers_lock:
            workers = list(self._workers)
            self._workers.clear()
        return workers
