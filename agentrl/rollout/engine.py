"""The rollout engine: many multi-turn episodes at once, as exact token-level trajectories.

Two schedules over the same episode code:

* ``"async"`` (default): ``num_envs`` episodes run concurrently and independently. A trajectory
  asks the policy for its next turn as soon as its env has answered; the policy batches whatever
  requests are pending at that moment (the Transformers backend's dynamic batching, or concurrent
  requests to a vLLM server), and env calls run in workers (threads, processes or Ray actors), so
  a slow tool call delays only its own trajectory. A slot that finishes an episode starts the next
  request at once.
* ``"lockstep"``: what a Gymnasium vector env does. ``num_envs`` episodes start together; each
  round, every live episode generates, then every live episode steps, and the round ends when the
  slowest one is done; the next ``num_envs`` requests start when the whole batch has ended. Kept for
  comparison (``python benchmarks/rollout.py``).

Episodes are built token by token (:class:`~agentrl.rollout.chat.ChatTokenizer`): the first prompt
is tokenised once, each completion is appended as sampled, each observation is tokenised alone
with its template glue and appended; nothing is re-tokenised. A failing episode (an env that
raises or hangs or ends with ``done_reason="env_error"``, a backend error, a stale policy) is
marked ``failed`` with the reason, retried ``retries`` times, and then dropped or kept as the
config says; every wait has a deadline, so one bad episode never stalls the others.

Example:
    >>> import functools, tempfile
    >>> from agentrl.llm.tiny import build_tiny_model
    >>> from agentrl.llm.transformers_backend import TransformersBackend
    >>> from agentrl.rollout import RolloutConfig, RolloutEngine, group_requests
    >>> from agentrl.rollout.workloads import LatencyEnv
    >>> backend = TransformersBackend(build_tiny_model(tempfile.mkdtemp() + "/m"))
    >>> env_fn = functools.partial(LatencyEnv, max_turns=3, min_latency_s=0.0, max_latency_s=0.01)
    >>> config = RolloutConfig(num_envs=4, max_new_tokens=8, temperature=1.0, sampling_seed=0)
    >>> with RolloutEngine(env_fn, backend, config=config) as engine:
    ...     trajectories = engine.run(group_requests([0, 1], group_size=2))
    >>> [t.request.group_id for t in trajectories]
    [0, 0, 1, 1]
    >>> all(t.ok and sum(t.loss_mask) == t.num_policy_tokens for t in trajectories)
    True
    >>> backend.close()
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from agentrl.core.choices import did_you_mean
from agentrl.core.episode import env_failure
from agentrl.core.errors import AgentRLError
from agentrl.llm.base import ChatMessage, Generation, GenerationConfig
from agentrl.rollout.chat import ChatTokenizer
from agentrl.rollout.errors import RolloutConfigError, RolloutMisuse
from agentrl.rollout.trajectory import RolloutRequest, Trajectory, TurnRecord
from agentrl.rollout.workers import EnvWorker, ThreadWorkers, WorkerFactory

__all__ = ["EpisodeFailed", "RolloutConfig", "RolloutEngine", "TokenPolicy", "group_requests", "observation_parts"]

_MODES = ("async", "lockstep")


@runtime_checkable
class TokenPolicy(Protocol):
    """A policy that continues exact token ids: ``TransformersBackend``, ``OpenAICompatibleBackend``."""

    async def agenerate_ids(self, prompt_ids: Sequence[int], config: GenerationConfig) -> Generation:
        """Sample a completion of ``prompt_ids``; the result carries token ids and logprobs."""
        ...


class EpisodeFailed(AgentRLError):
    """One episode cannot go on (the reason is its message); the engine records it and moves on."""


@dataclass(frozen=True)
class RolloutConfig:
    """How the engine collects.

    Attributes:
        num_envs: how many episodes run at once (and how many envs exist).
        mode: ``"async"`` or ``"lockstep"`` (see the module docstring).
        max_new_tokens: the most tokens the policy samples per turn.
        temperature: sampling temperature (0 for greedy).
        top_p: nucleus sampling mass.
        use_env_stop: end a turn at the env's ``metadata["stop_sequences"]`` too.
        stop: more strings that end a turn.
        sampling_seed: makes sampling reproducible: each turn's seed is derived from it, the
            request's position, the attempt and the turn; ``None`` samples freshly.
        max_turns: an engine-side cap on policy turns (``None``: the env's own budget decides).
        max_context_tokens: end an episode (``truncated``) before a prompt would exceed this.
        reset_timeout_s: the most seconds ``reset`` (and building the env) may take.
        step_timeout_s: the most seconds one ``step`` may take.
        generate_timeout_s: the most seconds one generation may take.
        retries: how many times a failed request is tried again.
        keep_failed: return failed trajectories too (``status == "failed"``); else they are dropped.
        max_staleness: the most policy versions a trajectory may lag (``None``: no bound); a
            trajectory whose start version falls further behind fails as ``stale`` before its next turn.
        observation_role: the chat role of the env's messages.
        max_images: keep at most this many images (screenshots) in a VLM's context (``None``: all). When an
            observation would exceed it, the episode goes on in a new context window: the conversation so far,
            re-rendered with every image but the last ``max_images`` replaced by :data:`IMAGE_OMITTED`
            (UI-TARS keeps its last 5 screenshots the same way). The earlier windows stay in the
            trajectory (``Trajectory.windows``) and are trained as rows of their own; each window's tokens are
            exact (its own prompt is tokenised once, then appended to as usual).
    """

    num_envs: int = 8
    mode: str = "async"
    max_new_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    use_env_stop: bool = True
    stop: tuple[str, ...] = ()
    sampling_seed: int | None = None
    max_turns: int | None = None
    max_context_tokens: int | None = None
    reset_timeout_s: float = 120.0
    step_timeout_s: float = 60.0
    generate_timeout_s: float = 600.0
    retries: int = 0
    keep_failed: bool = False
    max_staleness: int | None = None
    observation_role: str = "user"
    max_images: int | None = None

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            hint = did_you_mean(self.mode, _MODES)
            raise RolloutConfigError(f"mode must be one of {_MODES}, got {self.mode!r}{hint}")
        if self.num_envs < 1:
            raise RolloutConfigError(f"num_envs must be at least 1, got {self.num_envs}")
        if self.max_new_tokens < 1:
            raise RolloutConfigError(f"max_new_tokens must be at least 1, got {self.max_new_tokens}")
        if self.retries < 0:
            raise RolloutConfigError(f"retries must be >= 0, got {self.retries}")
        if self.max_images is not None and self.max_images < 1:
            raise RolloutConfigError(f"max_images must be at least 1 (or None for all), got {self.max_images}")
        for name in ("reset_timeout_s", "step_timeout_s", "generate_timeout_s"):
            if getattr(self, name) <= 0:
                raise RolloutConfigError(f"{name} must be positive, got {getattr(self, name)}")


def group_requests(
    tasks: Iterable[int | RolloutRequest | dict[str, Any] | None], group_size: int = 1
) -> list[RolloutRequest]:
    """GRPO groups: ``group_size`` requests per task, with the same seed and reset options.

    A task is a seed, a :class:`RolloutRequest` or a reset-options dict (``{"task_id": ...}``).
    Members of a group reset their envs identically, so every rollout of a group starts from the
    same state (envs are deterministic under a seed, as ``check_domain`` tests); they differ only
    in what the policy samples.

    Example:
        >>> [(r.seed, r.group_id, r.index) for r in group_requests([7, 8], group_size=2)]
        [(7, 0, 0), (7, 0, 1), (8, 1, 0), (8, 1, 1)]
    """
    if group_size < 1:
        raise RolloutConfigError(f"group_size must be at least 1, got {group_size}")
    requests: list[RolloutRequest] = []
    for group, task in enumerate(tasks):
        if isinstance(task, RolloutRequest):
            base = task
        elif isinstance(task, dict):
            base = RolloutRequest(seed=task.get("seed"), options={k: v for k, v in task.items() if k != "seed"})
        elif task is None or isinstance(task, int):
            base = RolloutRequest(seed=task)
        else:
            raise TypeError(f"a task is a seed, a RolloutRequest or an options dict; got {type(task).__name__}")
        requests.extend(replace(base, group_id=group, index=i) for i in range(group_size))
    return requests


@dataclass
class _Episode:
    """An episode in progress: its trajectory plus what the next phase needs."""

    position: int
    trajectory: Trajectory
    worker: EnvWorker | None = None
    has_system: bool = False
    stop: tuple[str, ...] = ()
    last_generation: Generation | None = None
    #: How many images the last observation appended: a cut of that observation (``_truncate``) drops them too.
    last_observation_images: int = 0
    done: bool = False
    started: float = field(default_factory=time.perf_counter)


class RolloutEngine:
    """Collect token-level trajectories from any text env with a token-in policy.

    Args:
        envs: a :class:`~agentrl.rollout.workers.WorkerFactory` (threads, processes, Ray), or a
            zero-argument callable that builds one env (run in :class:`ThreadWorkers`).
        policy: a :class:`TokenPolicy`; it should batch concurrent requests.
        chat: the policy's :class:`ChatTokenizer`; by default taken from the policy
            (``ChatTokenizer.for_backend``), which needs a ``tokenizer`` attribute.
        config: a :class:`RolloutConfig`.

    Attributes:
        policy_version: the current policy version; a trainer bumps it after each update, and each
            turn records the version that sampled it.
        stats: counters: ``episodes``, ``failed``, ``retried``, ``turns``, ``policy_tokens``,
            ``env_tokens``, ``generate_s``, ``env_s``.
    """

    def __init__(
        self,
        envs: WorkerFactory | Callable[[], Any],
        policy: TokenPolicy,
        *,
        chat: ChatTokenizer | None = None,
        config: RolloutConfig | None = None,
    ) -> None:
        if not callable(getattr(policy, "agenerate_ids", None)):
            raise TypeError(
                f"the policy must continue token ids (agenerate_ids); {type(policy).__name__} cannot. "
                "Use TransformersBackend, or OpenAICompatibleBackend against a vLLM/SGLang server"
            )
        self.config = config or RolloutConfig()
        self.workers: WorkerFactory = envs if isinstance(envs, WorkerFactory) else ThreadWorkers(envs)
        self._owns_workers = not isinstance(envs, WorkerFactory)
        self.policy = policy
        if chat is None:
            if getattr(policy, "tokenizer", None) is None:
                raise ValueError(
                    "pass chat=ChatTokenizer.from_pretrained(<the model's folder>): the policy has no tokenizer"
                )
            chat = ChatTokenizer.for_backend(policy)
        self.chat = chat
        self.policy_version = 0
        self.stats: dict[str, float] = dict.fromkeys(
            ("episodes", "failed", "retried", "turns", "policy_tokens", "env_tokens", "generate_s", "env_s"), 0
        )
        self._idle: list[EnvWorker] = []  # started envs between episodes, kept across runs
        self._busy: set[EnvWorker] = set()  # envs inside an episode
        self._positions: dict[int, int] = {}  # id(trajectory) -> position in the current requests
        self._collecting = False
        self._closed = False

    # ------------------------------------------------------------------ public API

    def run(self, requests: Sequence[RolloutRequest]) -> list[Trajectory]:
        """Collect one trajectory per request, in the order of ``requests`` (blocking)."""
        return asyncio.run(self.arun(requests))

    async def arun(self, requests: Sequence[RolloutRequest]) -> list[Trajectory]:
        """Collect one trajectory per request, in the order of ``requests``.

        Failed requests are left out unless ``config.keep_failed``.
        """
        done = [t async for t in self.astream(requests)]
        return sorted(done, key=lambda t: self._positions[id(t)])

    async def astream(self, requests: Sequence[RolloutRequest]) -> AsyncIterator[Trajectory]:
        """Yield trajectories as they finish (fully asynchronous training consumes this)."""
        if self._closed:
            raise RolloutMisuse("the engine is closed; make a new RolloutEngine")
        if self._collecting:
            raise RolloutMisuse(
                "this engine is already collecting; run one collection at a time per engine (or make a second engine)"
            )
        self._collecting = True
        items = [r if isinstance(r, RolloutRequest) else RolloutRequest(seed=r) for r in requests]
        self._positions = {}
        out: asyncio.Queue[Trajectory | None] = asyncio.Queue()
        runner = self._run_async if self.config.mode == "async" else self._run_lockstep
        async def run_then_end() -> None:
            try:
                await runner(items, out)
            finally:  # a collection that stopped on an error still wakes the reader below
                out.put_nowait(None)

        task = asyncio.ensure_future(run_then_end())
        try:
            while True:
                trajectory = await out.get()
                if trajectory is None:
                    break
                yield trajectory
            await task
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            # Episodes cut off mid-way leave their envs in an unknown state: drop them.
            busy, self._busy = self._busy, set()
            for worker in busy:
                worker.abandon()
            self._collecting = False

    async def aclose(self) -> None:
        """Close the envs (gracefully) and the worker factory this engine made; idempotent."""
        if self._closed:
            return
        self._closed = True
        workers, self._idle = self._idle, []
        if workers:
            await asyncio.gather(*(w.close() for w in workers), return_exceptions=True)
        if self._owns_workers:
            self.workers.shutdown()

    def close(self) -> None:
        """:meth:`aclose` from synchronous code (inside a running event loop the envs are abandoned instead).

        Envs are kept between :meth:`run` calls (a trainer collects every step with the same envs and
        sandboxes), so they are closed here, not after each run.
        """
        if self._closed:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(self.aclose())
            return
        self._closed = True
        workers, self._idle = self._idle, []
        for worker in workers:
            worker.abandon()
        if self._owns_workers:
            self.workers.shutdown()

    def __enter__(self) -> RolloutEngine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ schedules

    async def _run_async(self, requests: list[RolloutRequest], out: asyncio.Queue[Trajectory | None]) -> None:
        pending: asyncio.Queue[tuple[int, RolloutRequest, int] | None] = asyncio.Queue()
        for position, request in enumerate(requests):
            pending.put_nowait((position, request, 1))
        remaining = [len(requests)]
        slots = min(self.config.num_envs, max(len(requests), 1))

        async def slot() -> None:
            while True:
                item = await pending.get()
                if item is None:  # every request is settled
                    return
                position, request, attempt = item
                episode = await self._begin(position, request, attempt)
                while not episode.done:
                    await self._generate(episode)
                    if not episode.done:
                        await self._step(episode)
                if self._finish(episode, out):
                    pending.put_nowait((position, request, attempt + 1))
                    continue
                remaining[0] -= 1
                if remaining[0] == 0:  # wake every slot waiting for work that will not come
                    for _ in range(slots):
                        pending.put_nowait(None)

        if requests:
            await asyncio.gather(*(slot() for _ in range(slots)))
        out.put_nowait(None)

    async def _run_lockstep(self, requests: list[RolloutRequest], out: asyncio.Queue[Trajectory | None]) -> None:
        queue: list[tuple[int, RolloutRequest, int]] = [(p, r, 1) for p, r in enumerate(requests)]
        while queue:
            chunk, queue = queue[: self.config.num_envs], queue[self.config.num_envs :]
            episodes = await asyncio.gather(*(self._begin(p, r, a) for p, r, a in chunk))
            while any(not e.done for e in episodes):
                await asyncio.gather(*(self._generate(e) for e in episodes if not e.done))
                await asyncio.gather(*(self._step(e) for e in episodes if not e.done))
            for episode, (position, request, attempt) in zip(episodes, chunk, strict=True):
                if self._finish(episode, out):
                    queue.append((position, request, attempt + 1))
        out.put_nowait(None)

    # ------------------------------------------------------------------ one episode, in phases

    async def _begin(self, position: int, request: RolloutRequest, attempt: int) -> _Episode:
        """Get a worker, reset its env and tokenise the first prompt."""
        trajectory = Trajectory(request=request, attempts=attempt, policy_version=self.policy_version)
        episode = _Episode(position, trajectory)
        try:
            episode.worker = await self._acquire()
            started = time.perf_counter()
            try:
                obs, info = await asyncio.wait_for(
                    episode.worker.reset(request.seed, request.options), self.config.reset_timeout_s
                )
            except TimeoutError as exc:
                raise EpisodeFailed(f"env reset timed out after {self.config.reset_timeout_s:g}s") from exc
            finally:
                _add_time(trajectory, self.stats, "env", started)
            trajectory.task_id = None if info.get("task_id") is None else str(info["task_id"])
            trajectory.reset_info = info
            system = episode.worker.system_prompt
            episode.has_system = bool(system)
            env_stop = episode.worker.stop_sequences if self.config.use_env_stop else ()
            episode.stop = tuple(dict.fromkeys((*env_stop, *self.config.stop)))
            text, images = self._observation(obs)
            messages: list[ChatMessage] = [{"role": "system", "content": system}] if system else []
            messages.append({"role": self.config.observation_role, "content": text})
            trajectory.messages = messages
            ids = self._with_images(self.chat.prompt_ids(messages), images, trajectory)
            trajectory.append_env(ids)
            trajectory.prompt_length = len(ids)
            self.stats["env_tokens"] += len(ids)
        except Exception as exc:
            if isinstance(exc, RolloutConfigError):
                raise  # no episode of this collection can run: stop it, with the fix, before any rollout
            self._fail(episode, exc)
        return episode

    async def _generate(self, episode: _Episode) -> None:
        """Sample the policy's next turn and append it."""
        trajectory = episode.trajectory
        config = self.config
        try:
            lag = self.policy_version - trajectory.policy_version
            if config.max_staleness is not None and lag > config.max_staleness:
                raise EpisodeFailed(f"stale: the policy moved {lag} versions past this trajectory's start")
            if config.max_turns is not None and trajectory.num_turns >= config.max_turns:
                self._truncate(episode, "max_turns")
                return
            budget = config.max_new_tokens
            if config.max_context_tokens is not None:
                budget = min(budget, config.max_context_tokens - len(trajectory.token_ids))
                if budget < 1:
                    self._truncate(episode, "context")
                    return
            generation_config = GenerationConfig(
                max_tokens=budget,
                temperature=config.temperature,
                top_p=config.top_p,
                stop=episode.stop,
                seed=self._turn_seed(episode),
            )
            generation = await generate_timed(
                self.policy, trajectory, generation_config, config.generate_timeout_s, self.stats
            )
            if generation.finish_reason == "error":
                raise EpisodeFailed("the backend returned an error")
            if not generation.token_ids or len(generation.token_ids) != len(generation.logprobs):
                raise EpisodeFailed(
                    "the backend returned no token ids/logprobs; token-level rollouts need them "
                    "(TransformersBackend, or a vLLM server with return_tokens_as_token_ids)"
                )
            trajectory.append_policy(generation.token_ids, generation.logprobs)
            trajectory.messages.append(
                {"role": "assistant", "content": self.chat.completion_text(generation.token_ids)}
            )
            episode.last_generation = generation
            self.stats["policy_tokens"] += len(generation.token_ids)
        except Exception as exc:
            self._fail(episode, exc)

    async def _step(self, episode: _Episode) -> None:
        """Pass the turn's text to the env and append its reply."""
        trajectory = episode.trajectory
        generation = episode.last_generation
        worker = episode.worker
        if generation is None or worker is None:  # _generate failed or truncated
            return
        episode.last_generation = None
        end = len(trajectory.token_ids)
        start = end - len(generation.token_ids)
        try:
            started = time.perf_counter()
            try:
                obs, reward, terminated, truncated, info = await asyncio.wait_for(
                    worker.step(generation.text), self.config.step_timeout_s
                )
            except TimeoutError as exc:
                raise EpisodeFailed(f"env step timed out after {self.config.step_timeout_s:g}s") from exc
            finally:
                _add_time(trajectory, self.stats, "env", started)
            terminated, truncated = bool(terminated), bool(truncated)
            failure = env_failure(info)
            if failure is not None:
                # The env's own machinery failed (a dead display, a crashed page): the episode says nothing
                # about the policy, so it is not trained on; this env is dropped and the request tried again.
                raise EpisodeFailed(failure)
            if (
                not (terminated or truncated)
                and self.config.max_turns is not None
                and trajectory.num_turns + 1 >= self.config.max_turns
            ):
                truncated = True
            observation_span = (end, end)
            episode.last_observation_images = 0
            roll: list[Any] | None = None  # the new images, when they open a new context window
            if not (terminated or truncated):
                text, images = self._observation(obs)
                limit = self.config.max_images
                if images and limit is not None and len(trajectory.images) + len(images) > limit:
                    roll = images
                else:
                    ids = self.chat.observation_ids(
                        text, generation.token_ids, has_system=episode.has_system, role=self.config.observation_role
                    )
                    ids = self._with_images(ids, images, trajectory)
                    observation_span = trajectory.append_env(ids)
                    episode.last_observation_images = len(images)
                    self.stats["env_tokens"] += len(ids)
                trajectory.messages.append({"role": self.config.observation_role, "content": text})
            trajectory.turns.append(
                TurnRecord(
                    completion_span=(start, end),
                    observation_span=observation_span,
                    action=generation.text,
                    finish_reason=generation.finish_reason,
                    reward=float(reward),
                    terminated=terminated,
                    truncated=truncated,
                    void_turn=bool(info.get("void_turn", False)),
                    info=dict(info),
                    policy_version=self.policy_version,
                )
            )
            self.stats["turns"] += 1
            if roll is not None:
                self._new_window(trajectory, roll)
            if terminated or truncated:
                episode.done = True
        except Exception as exc:
            self._fail(episode, exc)

    # ------------------------------------------------------------------ helpers

    def _observation(self, obs: Any) -> tuple[str, list[Any]]:
        """An observation as message text (an image placeholder per image, first) and the images' encodings."""
        text, images = observation_parts(obs)
        if not images:
            return text, []
        encode = getattr(self.policy, "encode_image", None)
        placeholder = getattr(self.policy, "image_placeholder", None)
        if encode is None or placeholder is None:
            raise EpisodeFailed(
                f"the env gives images but the policy {type(self.policy).__name__} reads text only; use "
                "TransformersVLMBackend (a model with a vision tower) or a text view of the env (obs_type='text')"
            )
        return placeholder * len(images) + text, [encode(image) for image in images]

    def _with_images(self, ids: list[int], images: list[Any], trajectory: Trajectory) -> list[int]:
        """``ids`` with each image placeholder expanded to its image's tokens; the images join the trajectory."""
        if not images:
            return ids
        expanded = list(self.policy.expand_images(ids, images))  # type: ignore[attr-defined]
        trajectory.images.extend(images)
        return expanded

    def _new_window(self, trajectory: Trajectory, new_images: list[Any]) -> None:
        """Close the current context window and open one with the last ``max_images`` images (see RolloutConfig)."""
        limit = int(self.config.max_images or 1)
        window = Trajectory(
            request=trajectory.request,
            token_ids=trajectory.token_ids,
            loss_mask=trajectory.loss_mask,
            logprobs=trajectory.logprobs,
            prompt_length=trajectory.prompt_length,
            turns=trajectory.turns,
            policy_version=trajectory.policy_version,
            images=trajectory.images,
        )
        kept = [*trajectory.images, *new_images][-limit:]
        placeholder = str(self.policy.image_placeholder)  # type: ignore[attr-defined]
        total = sum(str(m["content"]).count(placeholder) for m in trajectory.messages)
        omit = total - len(kept)
        messages: list[ChatMessage] = []
        for message in trajectory.messages:
            content = str(message["content"])
            while omit > 0 and placeholder in content:
                content = content.replace(placeholder, IMAGE_OMITTED, 1)
                omit -= 1
            messages.append({"role": message["role"], "content": content})
        ids = list(self.policy.expand_images(self.chat.prompt_ids(messages), kept))  # type: ignore[attr-defined]
        trajectory.windows.append(window)
        trajectory.token_ids, trajectory.loss_mask, trajectory.logprobs = list(ids), [0] * len(ids), [0.0] * len(ids)
        trajectory.prompt_length, trajectory.turns, trajectory.images = len(ids), [], kept
        self.stats["env_tokens"] += len(ids)

    def _truncate(self, episode: _Episode, reason: str) -> None:
        """End an episode the engine cut short: the last turn (if any) becomes truncated."""
        trajectory = episode.trajectory
        if not trajectory.turns and trajectory.windows:  # cut right after a new window: end in the last one
            last_window = trajectory.windows.pop()
            trajectory.token_ids, trajectory.loss_mask = last_window.token_ids, last_window.loss_mask
            trajectory.logprobs, trajectory.turns = last_window.logprobs, last_window.turns
            trajectory.prompt_length, trajectory.images = last_window.prompt_length, last_window.images
            trajectory.messages.pop()
        if trajectory.turns:
            last = trajectory.turns[-1]
            # Its observation is already in the tokens; drop it so the sequence ends with the policy.
            if last.observation_span[1] > last.observation_span[0]:
                cut = last.observation_span[0]
                del trajectory.token_ids[cut:], trajectory.loss_mask[cut:], trajectory.logprobs[cut:]
                # Its images go with its tokens: an image whose tokens are gone would still reach the
                # trainer's forward pass, which then finds more image features than image tokens.
                if episode.last_observation_images:
                    del trajectory.images[-episode.last_observation_images :]
                    episode.last_observation_images = 0
                trajectory.messages.pop()
                last.observation_span = (cut, cut)
            last.truncated = True
            last.info = {**last.info, "engine_truncated": reason}
        else:
            self._fail(episode, EpisodeFailed(f"the first prompt leaves no room to generate ({reason})"))
            return
        episode.done = True

    def _fail(self, episode: _Episode, exc: BaseException) -> None:
        trajectory = episode.trajectory
        trajectory.status = "failed"
        reason = str(exc) if isinstance(exc, EpisodeFailed) else f"{type(exc).__name__}: {exc}"
        trajectory.failure = reason
        episode.done = True
        episode.last_generation = None
        worker, episode.worker = episode.worker, None
        if worker is not None:
            # The env's state is unknown after a failure (or it is still running a hung call).
            self._busy.discard(worker)
            worker.abandon()

    def _finish(self, episode: _Episode, out: asyncio.Queue[Trajectory | None]) -> bool:
        """Release the worker and emit the trajectory; True when the request must be tried again."""
        trajectory = episode.trajectory
        trajectory.timings["total"] = time.perf_counter() - episode.started
        turns = trajectory.all_turns
        trajectory.staleness = self.policy_version - (turns[-1].policy_version if turns else trajectory.policy_version)
        if episode.worker is not None:
            self._busy.discard(episode.worker)
            self._idle.append(episode.worker)
            episode.worker = None
        if trajectory.ok:
            self.stats["episodes"] += 1
            self._positions[id(trajectory)] = episode.position
            out.put_nowait(trajectory)
            return False
        self.stats["failed"] += 1
        if trajectory.attempts <= self.config.retries:
            self.stats["retried"] += 1
            return True
        if self.config.keep_failed:
            self._positions[id(trajectory)] = episode.position
            out.put_nowait(trajectory)
        return False

    async def _acquire(self) -> EnvWorker:
        if self._idle:
            worker = self._idle.pop()
            self._busy.add(worker)
            return worker
        worker = self.workers.make()
        try:
            await asyncio.wait_for(worker.start(), self.config.reset_timeout_s)
        except TimeoutError as exc:
            worker.abandon()
            raise EpisodeFailed(f"building the env timed out after {self.config.reset_timeout_s:g}s") from exc
        except Exception as exc:
            worker.abandon()
            raise EpisodeFailed(f"building the env failed: {type(exc).__name__}: {exc}") from exc
        problem = getattr(worker, "action_problem", None)
        if problem:
            worker.abandon()
            raise RolloutConfigError(problem)
        self._busy.add(worker)
        return worker

    def _turn_seed(self, episode: _Episode) -> int | None:
        if self.config.sampling_seed is None:
            return None
        t = episode.trajectory
        key = f"{self.config.sampling_seed}:{episode.position}:{t.request.index}:{t.attempts}:{t.num_turns}"
        return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big") >> 1


async def generate_timed(
    policy: Any, trajectory: Trajectory, generation_config: Any, timeout_s: float, stats: dict[str, Any]
) -> Any:
    """One turn's generation from the trajectory's tokens, its seconds added to the trajectory's and ``stats``'s.

    Raises:
        EpisodeFailed: the policy did not answer within ``timeout_s``.
    """
    started = time.perf_counter()
    try:
        if trajectory.images:  # a VLM: the pixels of every image block in the prompt go with it
            call = policy.agenerate_ids(list(trajectory.token_ids), generation_config, images=list(trajectory.images))
        else:
            call = policy.agenerate_ids(list(trajectory.token_ids), generation_config)
        return await asyncio.wait_for(call, timeout_s)
    except TimeoutError as exc:
        raise EpisodeFailed(f"generation timed out after {timeout_s:g}s") from exc
    finally:
        _add_time(trajectory, stats, "generate", started)


def _add_time(trajectory: Trajectory, stats: dict[str, Any], kind: str, started: float) -> None:
    """Add the seconds since ``started`` to the trajectory's and ``stats``'s ``kind`` ("generate" or "env")."""
    elapsed = time.perf_counter() - started
    trajectory.timings[kind] += elapsed
    stats[f"{kind}_s"] += elapsed


IMAGE_OMITTED = "[an earlier screenshot]"
"""What stands for an image that a new context window leaves out (``RolloutConfig.max_images``)."""
IMAGE_KEYS = ("screenshot", "pixels", "image")
"""Keys of a dict observation that hold its image (OSWorld's ``screenshot``, the games' ``pixels``)."""
TEXT_KEYS = ("instruction", "text", "a11y_tree", "accessibility_tree")
"""Keys of a dict observation that hold text, in the order they are written into the message."""


def observation_parts(observation: Any) -> tuple[str, list[Any]]:
    """An observation as ``(text, images)``: a string, an (H, W, 3) uint8 image, or a dict of both.

    A dict's images are under :data:`IMAGE_KEYS`, its texts under :data:`TEXT_KEYS` (each text written on
    its own line, the key first when there are several); other keys are ignored.

    >>> import numpy as np
    >>> observation_parts("hello")
    ('hello', [])
    >>> text, images = observation_parts({"pixels": np.zeros((4, 4, 3), np.uint8), "text": "a ball"})
    >>> text, len(images)
    ('a ball', 1)
    >>> observation_parts({"score": 3})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    agentrl.rollout.engine.EpisodeFailed: a dict observation needs an image (...) or a text (...) key; got ['score']
    """
    import numpy as np

    from agentrl.llm.vlm_backend import check_image

    if isinstance(observation, str):
        return observation, []
    if isinstance(observation, np.ndarray) and observation.ndim == 3:
        try:
            return "", [check_image(observation, "observation")]
        except ValueError as exc:
            raise EpisodeFailed(str(exc)) from None
    if isinstance(observation, dict):
        images = [(k, observation[k]) for k in IMAGE_KEYS if observation.get(k) is not None]
        texts = [(k, observation[k]) for k in TEXT_KEYS if isinstance(observation.get(k), str)]
        if not images and not texts:
            raise EpisodeFailed(
                f"a dict observation needs an image ({', '.join(IMAGE_KEYS)}) or a text ({', '.join(TEXT_KEYS)}) "
                f"key; got {sorted(observation)}"
            )
        try:
            checked = [check_image(image, f"observation[{key!r}]") for key, image in images]
        except ValueError as exc:
            raise EpisodeFailed(str(exc)) from None
        if len(texts) == 1:
            return texts[0][1], checked
        return "\n".join(f"{key}: {value}" for key, value in texts), checked
    got = type(observation).__name__
    if isinstance(observation, np.ndarray):
        got = f"a {observation.dtype} array of shape {observation.shape}"
    raise EpisodeFailed(
        f"the rollout engine takes text, an (H, W, 3) uint8 image or a dict of them; got {got} (wrap a vector env "
        "so that it returns text, as agentrl's envs do)"
    )
