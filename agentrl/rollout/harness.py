"""Rollouts by an agent harness: any agent written against the OpenAI API plays the episodes.

A *harness* is a callable ``run_episode(env, client, model) -> None`` (or ``async def``) that plays one episode
of ``env`` (a Gymnasium env: ``reset``, then ``step`` until the episode ends) and asks its model through
``client``, an ``openai.OpenAI`` (``openai.AsyncOpenAI`` for an ``async def`` harness) pointed at a recording
endpoint, under the model name ``model``. The agent code is the team's own: a plain client loop, the OpenAI Agents
SDK, LangGraph...; it only has to use the client it is handed.

:class:`HarnessEngine` has the rollout engine's interface (``run(requests) -> trajectories``), so the trainers
use it in place of :class:`~agentrl.rollout.RolloutEngine` (``agentrl train grpo --harness pkg.mod:fn``). It
serves the policy's backend with a :class:`~agentrl.rollout.recording.CallRecorder`, runs the harness once per
request in a thread, and builds each episode's trajectory from the recorded token ids
(:func:`~agentrl.rollout.recording.trajectory_from_calls`), with the env's rewards. The env the harness gets
resets to the request's seed and options (the harness's own seed is ignored: a GRPO group must share its task).

An episode fails (``status == "failed"``, with the reason in ``failure``; the trainers count it and never train on
it) when the harness raises, when it never calls the model, or when a call is refused (no episode tag, a prompt
longer than the model's context).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium as gym

from agentrl.core.errors import DependencyNotInstalled
from agentrl.core.harness import Harness, call_harness, load_harness
from agentrl.llm.server import EPISODE_HEADER
from agentrl.rollout.engine import RolloutConfig
from agentrl.rollout.recording import CallRecorder, trajectory_from_calls
from agentrl.rollout.trajectory import RolloutRequest, Trajectory

__all__ = ["HarnessEngine", "RecordedEnv", "load_harness"]


class RecordedEnv(gym.Wrapper[Any, Any, Any, Any]):
    """The env a harness gets: resets to its request's task, and notes each step's reward against the calls.

    Each step is noted with the number of model calls the episode had made by then, which is how
    :func:`~agentrl.rollout.recording.trajectory_from_calls` gives the reward to the turn that earned it.
    """

    def __init__(self, env: gym.Env[Any, Any], request: RolloutRequest, recorder: CallRecorder, tag: str) -> None:
        super().__init__(env)
        self.request, self.recorder, self.tag = request, recorder, tag
        self.rewards: list[tuple[int, float]] = []
        self.terminated = self.truncated = False
        self.resets = 0
        self.reset_info: dict[str, Any] = {}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset to the request's seed and options (what the harness passes is ignored; see the module)."""
        self.resets += 1
        self.rewards, self.terminated, self.truncated = [], False, False
        observation, info = self.env.reset(seed=self.request.seed, options=self.request.options)
        self.reset_info = dict(info)
        return observation, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Step the env; note the reward and whether the episode ended."""
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.rewards.append((self.recorder.count(self.tag), float(reward)))
        self.terminated = self.terminated or bool(terminated)
        self.truncated = self.truncated or bool(truncated)
        return observation, reward, terminated, truncated, info


class HarnessEngine:
    """Collects episodes by running a harness against a recording endpoint (see the module docstring).

    Args:
        make_env: builds one env (called once per episode).
        harness: ``run_episode(env, client, model)``, or its ``package.module:function`` name.
        backend: the policy's generation backend (the trainer syncs its weights; the endpoint serves it, so
            an update is visible to the next call at once).
        config: the rollout settings: ``num_envs`` episodes at once, ``temperature``/``top_p`` (every call
            samples at these), ``max_new_tokens`` (a cap per call), ``generate_timeout_s`` (per call),
            ``keep_failed``.
        model_name: the model name the harness is given (and the endpoint answers to).
    """

    def __init__(
        self,
        make_env: Callable[[], gym.Env[Any, Any]],
        harness: str | Harness,
        backend: Any,
        config: RolloutConfig | None = None,
        *,
        model_name: str = "policy",
    ) -> None:
        try:
            import openai  # noqa: F401
        except ImportError as exc:
            raise DependencyNotInstalled("openai", extra="harness") from exc
        self.make_env = make_env
        self.harness = load_harness(harness)
        self.backend = backend
        self.config = config or RolloutConfig()
        self.model_name = model_name
        self.policy_version = 0
        self.recorder = CallRecorder()
        self._server: Any = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        """The recording endpoint's API root (started on first use)."""
        with self._lock:
            if self._server is None:
                from agentrl.llm.server import serve_model

                self._server = serve_model(self.backend, model_name=self.model_name, recorder=self.recorder)
            return str(self._server.base_url)

    def run(self, requests: Sequence[RolloutRequest]) -> list[Trajectory]:
        """Play one episode per request with the harness; return the trajectories in request order.

        Failed episodes are returned (``status == "failed"``) when ``config.keep_failed``, else dropped.
        """
        self.recorder.temperature = self.config.temperature
        self.recorder.top_p = self.config.top_p
        self.recorder.max_tokens = self.config.max_new_tokens
        url = self.base_url
        with ThreadPoolExecutor(max_workers=max(1, self.config.num_envs), thread_name_prefix="harness") as pool:
            done = list(pool.map(lambda request: self._episode(request, url), requests))
        return done if self.config.keep_failed else [t for t in done if t.ok]

    def _episode(self, request: RolloutRequest, url: str) -> Trajectory:
        started = time.perf_counter()
        tag = f"ep-{uuid.uuid4().hex}"
        self.recorder.open(tag)
        version = self.policy_version
        failure: str | None = None
        env: RecordedEnv | None = None
        try:
            env = RecordedEnv(self.make_env(), request, self.recorder, tag)
            call_harness(
                self.harness,
                env,
                self.model_name,
                base_url=url,
                api_key="agentrl-recording-endpoint",
                headers={EPISODE_HEADER: tag},
                timeout=self.config.generate_timeout_s,
            )
        except Exception as exc:  # the harness is user code: any error ends this episode only
            failure = f"the harness raised {type(exc).__name__}: {exc}"
        finally:
            refused = self.recorder.failure(tag)
            calls = self.recorder.close(tag)
            if env is not None:
                env.close()
        if refused is not None:
            failure = refused  # the endpoint's reason (a malformed tool call) outranks how the harness took it
        if failure is None and not calls:
            failure = (
                "the harness never called the model: it must ask the model through the client it is handed "
                "(run_episode(env, client, model))"
            )
        if failure is None and env is not None and env.resets == 0:
            failure = "the harness never reset the env: an episode starts with env.reset()"
        trajectory = Trajectory(request=request, policy_version=version)
        if failure is None and env is not None:
            try:
                trajectory = trajectory_from_calls(
                    calls,
                    env.rewards,
                    request=request,
                    terminated=env.terminated,
                    truncated=env.truncated,
                    policy_version=version,
                )
                for piece in trajectory.pieces():
                    piece.validate()
                trajectory.reset_info = dict(env.reset_info)
                task_id = env.reset_info.get("task_id")
                trajectory.task_id = None if task_id is None else str(task_id)
            except ValueError as exc:
                failure = f"the recorded calls do not make a trajectory: {exc}"
                trajectory = Trajectory(request=request, policy_version=version)
        if failure is not None:
            trajectory.status, trajectory.failure = "failed", failure
        trajectory.timings["total"] = time.perf_counter() - started
        return trajectory

    def close(self) -> None:
        """Stop the recording endpoint (the backend is the caller's); idempotent."""
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.stop()
