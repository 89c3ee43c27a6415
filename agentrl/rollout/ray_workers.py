"""Env workers that run each env in a Ray actor, on any node of a Ray cluster.

Each :class:`RayWorker` is one Ray actor holding one env; the engine awaits the actor's
``ObjectRef`` directly (``await actor.step.remote(action)``), so no thread waits on Ray. A hung
env is abandoned with ``ray.kill``; an exception in the env, or an actor that died, is re-raised
as :class:`~agentrl.rollout.errors.EnvWorkerError`. Ray is imported only when a
:class:`RayWorkers` is built (``pip install 'agentrl-gym[ray]'``).

Single machine: ``RayWorkers(env_fn)`` starts a local Ray (without the dashboard) unless one is
already running in this process, and :meth:`RayWorkers.shutdown` stops it again.

Multi-node: install the same Python environment (with ``agentrl-gym`` and the env's extras) on
every node, then start a cluster and connect to it::

    # on the head node
    ray start --head --port=6379
    # on every other node
    ray start --address=HEAD_IP:6379
    # in the trainer, on any node of the cluster
    factory = RayWorkers(functools.partial(gym.make, "AgentRL/SQL-v0"), ray_init_kwargs={"address": "auto"})

Ray places the env actors across the cluster's nodes (``num_cpus_per_env`` is what each one
reserves: raise it to spread envs by CPU, keep 0 to pack them); :attr:`RayWorker.node_id` says
where each landed. ``shutdown`` then leaves the cluster running, as this process did not start it.

Recent Ray releases (2.60 here) turn on token authentication by default and write the token to
``~/.ray/auth_token`` on first start; see https://docs.ray.io/en/latest/ray-security/token-auth.html
for how nodes share it (``RAY_AUTH_MODE=disabled`` opts out).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from agentrl.core.errors import DependencyNotInstalled
from agentrl.rollout.errors import EnvWorkerError, RolloutMisuse
from agentrl.rollout.workers import EnvFactory, StepResult, TrackedWorkers, describe_env

__all__ = ["EnvWorkerError", "RayWorker", "RayWorkers"]

#: How long ``close`` lets the actor close its env before killing it.
CLOSE_TIMEOUT_S = 5.0


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise DependencyNotInstalled("ray", extra="ray") from exc
    return ray


class _EnvActor:
    """The actor's body: one env, built on ``describe`` (so a failing constructor is a plain task error)."""

    def __init__(self, env_fn: EnvFactory) -> None:
        self._env_fn = env_fn
        self._env: Any = None

    def describe(self) -> dict[str, Any]:
        import os

        import ray

        if self._env is None:
            self._env = self._env_fn()
        description = describe_env(self._env)
        description["pid"] = os.getpid()
        description["node_id"] = ray.get_runtime_context().get_node_id()
        return description

    def _require(self) -> Any:
        if self._env is None:
            raise RuntimeError("the env is not built; call describe() first")
        return self._env

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        return self._require().reset(seed=seed, options=options)

    def step(self, action: str) -> StepResult:
        return self._require().step(action)

    def close(self) -> None:
        env, self._env = self._env, None
        if env is not None:
            env.close()


_remote_actor_class: Any = None
_remote_lock = threading.Lock()


def _actor_class() -> Any:
    """``ray.remote(_EnvActor)``, made once (the module imports without Ray)."""
    global _remote_actor_class
    with _remote_lock:
        if _remote_actor_class is None:
            _remote_actor_class = _import_ray().remote(_EnvActor)
        return _remote_actor_class


class RayWorker:
    """One env in a Ray actor; made by :class:`RayWorkers`.

    An exception in the env is re-raised as :class:`~agentrl.rollout.errors.EnvWorkerError` with
    ``"Type: message"`` (the remote traceback on ``remote_traceback``); an actor that died (its
    process exited or was killed, its node was lost) raises
    :class:`~agentrl.rollout.errors.EnvWorkerError` saying so.
    """

    def __init__(self, env_fn: EnvFactory, num_cpus: float) -> None:
        self._env_fn = env_fn
        self._num_cpus = num_cpus
        self._actor: Any = None
        self._closed = False
        self._release: Callable[[], None] | None = None  # set by the factory: forget this worker
        self.system_prompt = ""
        self.stop_sequences: tuple[str, ...] = ()
        self.action_problem: str | None = None  # read from describe_env by start()
        #: The actor's process id and Ray node id, known after ``start``.
        self.pid: int | None = None
        self.node_id: str | None = None

    @property
    def actor(self) -> Any:
        """The Ray actor handle (``None`` before ``start``)."""
        return self._actor

    async def _call(self, method: str, *args: Any) -> Any:
        if self._closed:
            raise EnvWorkerError("the worker was closed or abandoned")
        if self._actor is None:
            raise EnvWorkerError("the worker is not started; await start() first")
        ray = _import_ray()
        try:
            return await getattr(self._actor, method).remote(*args)
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause
            summary = f"{type(cause).__name__}: {cause}" if isinstance(cause, BaseException) else str(exc)
            # A dual ``RayTaskError(RuntimeError)`` has no ``traceback_str`` of its own; its text has it.
            remote_traceback = getattr(exc, "traceback_str", None) or str(exc)
            raise EnvWorkerError(f"the env raised {summary}", remote_traceback) from None
        except ray.exceptions.RayActorError as exc:
            where = f" (pid {self.pid})" if self.pid is not None else ""
            raise EnvWorkerError(f"the env actor{where} died: {_first_line(exc)}") from exc
        except ray.exceptions.RayError as exc:  # e.g. the object was lost with its node
            raise EnvWorkerError(f"the env actor failed: {type(exc).__name__}: {_first_line(exc)}") from exc

    async def start(self) -> None:
        """Create the actor, build the env in it and read :func:`describe_env`."""
        if self._closed:
            raise EnvWorkerError("the worker was closed or abandoned")
        if self._actor is None:
            self._actor = _actor_class().options(num_cpus=self._num_cpus, max_concurrency=1).remote(self._env_fn)
        description = await self._call("describe")
        self.system_prompt = description["system_prompt"]
        self.stop_sequences = tuple(description["stop_sequences"])
        self.action_problem = description["action_problem"]
        self.pid = description["pid"]
        self.node_id = description["node_id"]

    async def reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        """``env.reset(seed=seed, options=options)`` in the actor."""
        return await self._call("reset", seed, options)

    async def step(self, action: str) -> StepResult:
        """``env.step(action)`` in the actor."""
        return await self._call("step", action)

    def abandon(self) -> None:
        """Kill the actor (``ray.kill``, no restart) without waiting."""
        if self._closed:
            return
        self._closed = True
        self._kill()

    def _kill(self) -> None:
        actor, self._actor = self._actor, None
        if actor is not None:
            try:
                _import_ray().kill(actor, no_restart=True)
            except Exception:  # already dead, or Ray already shut down
                pass
        release, self._release = self._release, None
        if release is not None:
            release()

    async def close(self) -> None:
        """Let the actor close its env (up to 5 s), then kill it; idempotent."""
        if self._closed:
            return
        self._closed = True
        actor = self._actor
        if actor is None:
            self._kill()  # nothing to kill; forget the worker
            return
        try:
            await asyncio.wait_for(_await_ref(actor.close.remote()), CLOSE_TIMEOUT_S)
        except Exception:  # a broken or hung env must not break the engine's shutdown
            pass
        finally:
            self._kill()


async def _await_ref(ref: Any) -> Any:
    return await ref


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class RayWorkers(TrackedWorkers):
    """Workers whose envs each run in a Ray actor, locally or across a Ray cluster.

    Args:
        env_fn: builds one env; serialized with cloudpickle, so lambdas work too.
        num_cpus_per_env: the CPUs each actor reserves in Ray's scheduler (default 0, so that
            many envs fit on a small machine; raise it to spread CPU-heavy envs over nodes).
        ray_init_kwargs: passed to ``ray.init`` when Ray is not yet initialized in this process
            (``{"address": "auto"}`` joins a running cluster). ``include_dashboard=False`` and
            ``log_to_driver=False`` are the defaults.
    """

    def __init__(
        self,
        env_fn: EnvFactory,
        *,
        num_cpus_per_env: float = 0.0,
        ray_init_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if not callable(env_fn):
            raise TypeError(f"env_fn must be a callable that builds an env, got {env_fn!r}")
        if num_cpus_per_env < 0:
            raise ValueError(f"num_cpus_per_env must be >= 0, got {num_cpus_per_env}")
        ray = _import_ray()
        self.env_fn = env_fn
        self.num_cpus_per_env = float(num_cpus_per_env)
        self.started_ray = False
        if not ray.is_initialized():
            ray.init(**{"include_dashboard": False, "log_to_driver": False, **(ray_init_kwargs or {})})
            self.started_ray = True
        super().__init__()
        self._shut_down = False

    def make(self) -> RayWorker:
        """A new worker; its actor is created by ``await worker.start()``."""
        if self._shut_down:
            raise RolloutMisuse("this RayWorkers was shut down; make a new one")
        return self._track(RayWorker(self.env_fn, self.num_cpus_per_env))

    def shutdown(self) -> None:
        """Kill every actor still alive; stop Ray if this factory started it. Idempotent."""
        for worker in self._take_all():
            worker.abandon()
        if self._shut_down:
            return
        self._shut_down = True
        if self.started_ray:
            ray = _import_ray()
            if ray.is_initialized():
                ray.shutdown()
