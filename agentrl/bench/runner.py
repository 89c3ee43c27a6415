"""The benchmark runner behind ``agentrl bench``: many episodes, concurrently, resumable.

Episodes are identified, not counted: episode ``j`` under seed ``s`` (attempt ``a`` with ``--k``)
of env ``E`` for agent config ``C`` has a key hashed from all of those plus a fingerprint of the
env's code and data. The runner reads ``<out>/results.jsonl``, skips every key already there and
plays the rest, appending one line per finished episode (see :mod:`agentrl.bench.results`), so
re-running a command, even after ``kill -9``, completes the set without duplicating anything.

Concurrency: ``concurrency`` slots run as asyncio tasks. Each slot owns one env (made with
``gym.make`` and reused across its episodes) and builds a fresh agent per episode from the shared
:class:`~agentrl.agents.registry.AgentBuilder` (LLM backends are created once and shared), seeded
with the episode's own derived seed, so results do not depend on scheduling. ``agent.aact`` is
awaited under ``asyncio.wait_for(..., action_timeout)``; agents that only have a synchronous
``act`` run it in a daemon thread, so a hung agent costs its episode and its (abandoned) thread,
never the run. ``env.reset``/``env.step`` run in worker threads, so a slow sandbox does not block
the other slots.

What a broken agent costs: an exception, a non-``str`` action (``InvalidActionType``) or a missed
deadline ends that episode with ``error`` set, reward 0 and success false; the run goes on. Over-long
actions are the env's business (it answers with an error observation). Stored texts are capped
(``max_text_chars``, with a visible marker) so that a 10 MB action cannot bloat the results file.

Whose error: each error is classified where it happens and stored as ``error_class``. The env could
not be made, its ``reset``/``step`` raised, it ended the episode with ``done_reason="env_error"``, or a
sandbox or dependency was unavailable: ``"infrastructure"``, and the next identical command plays that
episode again (a machine that was missing Chromium heals once it is installed). The agent raised,
timed out or gave an action the env refused: ``"agent"``, kept until ``--retry-errors``.

System parts: given the rows of ``agentrl/_system_deps.py``'s table (``BenchConfig.system_parts``),
envs whose system parts are missing (see :func:`agentrl.bench.suites.missing_requirements`) are not
run: the run says which part is missing and the command that installs it, and records the skip in
``<out>/skipped.json`` (shown in the report) until that env runs for that agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as _dt
import hashlib
import inspect
import json
import math
import os
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agentrl.bench.lock import entry_point_root, env_lock, env_version, hash_tree, lock_drift
from agentrl.bench.results import (
    AGENT,
    INFRASTRUCTURE,
    RESULTS_FILE,
    LineProblem,
    LoadedResults,
    ResultStore,
    RunLock,
    SkipLog,
    error_class,
    json_safe,
)
from agentrl.core.episode import env_failure
from agentrl.core.errors import AgentRLError
from agentrl.core.text import truncate_middle

__all__ = [
    "RECORD_FORMAT",
    "BenchConfig",
    "BenchOutcome",
    "EpisodeSpec",
    "agent_seed_for",
    "env_fingerprint",
    "episode_key",
    "episode_success",
    "merge_install_commands",
    "plan_episodes",
    "plan_sweep",
    "reset_seed_for",
    "run_bench",
]

#: version of the result-line layout (bumped when fields change meaning)
RECORD_FORMAT = 1

_INFO_FIELDS = ("action_error", "tool_error", "void_turn", "done_reason")


class _AgentSpecLike(Protocol):
    def config(self) -> dict[str, Any]: ...

    def build(self) -> Any: ...


@dataclass
class BenchConfig:
    """Everything one ``agentrl bench`` command asks for.

    Attributes:
        env_ids: the Gymnasium ids to benchmark on.
        agent: an :class:`~agentrl.agents.registry.AgentSpec` (anything with ``config()`` and ``build()``).
        out: the output directory (``results.jsonl``, ``run.json``, ``report.html``).
        episodes: episodes per seed per env.
        seeds: base seeds; each gives ``episodes`` distinct tasks.
        k: attempts per task (for pass@k): same env reset seed, different agent seed.
        concurrency: how many episodes run at once.
        action_timeout: seconds an agent may take for one action (or for building/resetting itself).
        env_kwargs: ``gym.make`` keyword arguments (they are part of each episode's identity).
        max_text_chars: cap on each stored observation/action (head and tail kept, marker between).
        success_threshold: the return at or above which an episode counts as a success, for envs
            whose final ``info`` has no boolean ``success``.
        retry_errors: also re-run episodes whose stored result ended in an error.
        progress: show a tqdm progress bar on stderr.
        report: write ``report.html`` at the end.
        command: the command line, stored in ``run.json``.
        video: for envs with pixel observations, save each episode's frames as an animated GIF in
            ``<out>/videos/`` (linked from the report).
        max_video_frames: the most frames kept per episode (the last ones are dropped).
        system_parts: the rows of ``agentrl/_system_deps.py``'s table (``check --json``'s ``parts``); envs
            that need a missing part are skipped, said and recorded. ``None``: no check.
        all_tasks: sweep every task of each env's dataset once, in dataset order, ``k`` attempts each
            (``episodes`` is then unused; one base seed derives the seeds); see :mod:`agentrl.bench.sweep`.
    """

    env_ids: Sequence[str]
    agent: _AgentSpecLike
    out: str | os.PathLike[str]
    episodes: int = 1
    seeds: Sequence[int] = (0,)
    k: int = 1
    concurrency: int = 1
    action_timeout: float = 300.0
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    max_text_chars: int = 20_000
    success_threshold: float = 1.0
    retry_errors: bool = False
    progress: bool = True
    report: bool = True
    command: Sequence[str] | None = None
    video: bool = True
    max_video_frames: int = 300
    system_parts: Sequence[Mapping[str, Any]] | None = None
    all_tasks: bool = False

    def validate(self) -> None:
        """Raise ``ValueError`` with the fix when an option is out of range."""
        if not self.env_ids:
            raise ValueError("give at least one env id")
        checks = [
            (self.episodes >= 1, f"--episodes must be >= 1, got {self.episodes}"),
            (self.k >= 1, f"--k must be >= 1, got {self.k}"),
            (self.concurrency >= 1, f"--concurrency must be >= 1, got {self.concurrency}"),
            (self.action_timeout > 0, f"--action-timeout must be > 0 seconds, got {self.action_timeout}"),
            (len(self.seeds) >= 1, "give at least one seed"),
            (all(isinstance(s, int) and s >= 0 for s in self.seeds),
             f"seeds must be ints >= 0, got {list(self.seeds)}"),
            (len(set(self.seeds)) == len(self.seeds), f"seeds must be distinct, got {list(self.seeds)}"),
            (self.max_text_chars >= 100, "max_text_chars must be >= 100"),
            (not self.all_tasks or len(self.seeds) == 1,
             f"--all-tasks runs each task once per attempt: give one base seed, not {list(self.seeds)} "
             "(use --k for more attempts)"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode to play: where, with which seeds, and its key."""

    env_id: str
    seed: int
    index: int
    attempt: int
    reset_seed: int
    agent_seed: int
    key: str
    #: a sweep's task (``reset(options={"task_id": ...})``); ``None``: the reset seed picks the task
    task_id: str | None = None


@dataclass
class BenchOutcome:
    """What a run did, and every result now in its file."""

    total: int
    already_done: int
    ran: int
    errors: int
    records: list[dict[str, Any]]
    problems: list[LineProblem]
    wall_s: float
    out: Path
    report_path: Path | None = None
    #: this command's episodes now in the file (``records`` holds every episode of the directory)
    planned: list[dict[str, Any]] = field(default_factory=list)
    #: the envs this command skipped (entries of ``skipped.json``)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    #: episodes played again this time because they had ended in an infrastructure error
    healed: int = 0
    #: with ``all_tasks``: each env's benchmark score (see :func:`agentrl.bench.sweep.sweep_score`)
    sweeps: list[dict[str, Any]] = field(default_factory=list)
    #: with ``all_tasks``: where the scores were written (``score.json``)
    score_path: Path | None = None

    @property
    def infrastructure_errors(self) -> int:
        """How many of the command's episodes ended in an infrastructure error (played again next time)."""
        return sum(1 for r in self.planned if error_class(r) == INFRASTRUCTURE)

    @property
    def agent_errors(self) -> int:
        """How many of the command's episodes ended in an agent error (played again with ``--retry-errors``)."""
        return sum(1 for r in self.planned if error_class(r) == AGENT)


# -- identity -----------------------------------------------------------------------------------
def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)


def _derive(*numbers: int) -> int:
    import numpy as np

    return int(np.random.SeedSequence(list(numbers)).generate_state(1, dtype=np.uint32)[0])


def episode_success(final_info: Mapping[str, Any], episode_return: float, threshold: float = 1.0) -> bool:
    """Whether an episode counts as solved: the final ``info``'s boolean ``success``, else return >= ``threshold``.

    >>> episode_success({"success": False}, 1.0), episode_success({}, 1.0), episode_success({}, 0.5)
    (False, True, False)
    """
    flag = final_info.get("success")
    return bool(flag) if isinstance(flag, bool) else episode_return >= threshold


def reset_seed_for(seed: int, index: int) -> int:
    """The env reset seed of episode ``index`` under base seed ``seed`` (same for every attempt).

    >>> reset_seed_for(0, 0) == reset_seed_for(0, 0) != reset_seed_for(0, 1)
    True
    """
    return _derive(seed, index, 0)


def agent_seed_for(seed: int, index: int, attempt: int) -> int:
    """The agent's seed for attempt ``attempt`` of episode ``index`` under base seed ``seed``."""
    return _derive(seed, index, 1, attempt)


def episode_key(
    env_id: str,
    fingerprint: str,
    agent_config: Mapping[str, Any],
    env_kwargs: Mapping[str, Any],
    seed: int,
    index: int,
    attempt: int,
    task_id: str | None = None,
) -> str:
    """The identity of an episode: a hash of everything that determines it (not of how it is run).

    A sweep's episode (``task_id`` given) is identified by its task, not by its position.
    """
    payload: dict[str, Any] = {
        "env_id": env_id,
        "env_fingerprint": fingerprint,
        "agent": agent_config,
        "env_kwargs": env_kwargs,
        "seed": seed,
        "episode": index,
        "attempt": attempt,
    }
    if task_id is not None:
        payload["task_id"] = task_id
    return hashlib.sha256(_canonical(payload).encode()).hexdigest()[:32]


def env_fingerprint(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> str:
    """A hash of what determines an env's behaviour: its code and its data.

    Covers every file of the package holding the env's entry point, ``agentrl/core``, and the
    content of each ``env_kwargs`` value that names an existing file (a dataset, for instance).
    Changing any of them gives new episode keys, so stale results are never mixed with new ones.
    """
    import gymnasium as gym

    import agentrl  # noqa: F401  (registers the built-in ids)

    gym.spec(env_id)  # raises a clear error for an unknown id
    digest = hashlib.sha256()
    root = entry_point_root(env_id)
    if root is not None:
        hash_tree(digest, root, "env")
    hash_tree(digest, Path(__file__).resolve().parent.parent / "core", "core")
    for name, value in sorted((env_kwargs or {}).items()):
        if isinstance(value, (str, os.PathLike)) and os.path.isfile(value):
            hash_tree(digest, Path(value), f"kwarg:{name}")
    return digest.hexdigest()[:16]


def plan_episodes(
    env_ids: Sequence[str],
    agent_config: Mapping[str, Any],
    env_kwargs: Mapping[str, Any],
    episodes: int,
    seeds: Sequence[int],
    k: int,
    fingerprints: Mapping[str, str],
) -> list[EpisodeSpec]:
    """Every episode a command asks for, env by env, seed by seed, episode by episode, attempt by attempt."""
    plan = []
    for env_id in env_ids:
        for seed in seeds:
            for index in range(episodes):
                for attempt in range(k):
                    key = episode_key(env_id, fingerprints[env_id], agent_config, env_kwargs, seed, index, attempt)
                    plan.append(EpisodeSpec(env_id, seed, index, attempt, reset_seed_for(seed, index),
                                            agent_seed_for(seed, index, attempt), key))
    return plan


def plan_sweep(
    task_ids: Mapping[str, Sequence[str]],
    agent_config: Mapping[str, Any],
    env_kwargs: Mapping[str, Any],
    seed: int,
    k: int,
    fingerprints: Mapping[str, str],
) -> list[EpisodeSpec]:
    """Every (task, attempt) of a full-dataset sweep, env by env, in dataset order.

    Task ``i`` of an env gets the reset seed of episode ``i`` under ``seed`` (the same for every attempt)
    and attempt ``a`` the agent seed of attempt ``a``; its key names the task id, not the position.
    """
    plan = []
    for env_id, ids in task_ids.items():
        for index, task_id in enumerate(ids):
            for attempt in range(k):
                key = episode_key(env_id, fingerprints[env_id], agent_config, env_kwargs, seed, index, attempt,
                                  task_id=task_id)
                plan.append(EpisodeSpec(env_id, seed, index, attempt, reset_seed_for(seed, index),
                                        agent_seed_for(seed, index, attempt), key, task_id=task_id))
    return plan


# -- running one episode ----------------------------------------------------------------------
class _AgentTimeout(AgentRLError):
    pass


class _EnvFailure(AgentRLError):
    """The env itself raised: the slot rebuilds it."""


def _agent_entry(action: Any, limit: int, seconds: float | None = None) -> dict[str, Any]:
    """The trajectory's record of an agent turn (``seconds``: how long the agent took, when the bench asked it)."""
    entry: dict[str, Any] = {"role": "agent", "text": _text(action, limit)}
    if seconds is not None:
        entry["seconds"] = round(seconds, 4)
    if not isinstance(action, str):
        entry["type"] = type(action).__name__
    return entry


def _env_entry(observation: Any, reward: Any, info: Mapping[str, Any], limit: int) -> dict[str, Any]:
    """The trajectory's record of an env step: the observation, the reward and the info fields worth keeping."""
    entry: dict[str, Any] = {"role": "env", "text": _text(observation, limit), "reward": float(reward)}
    extras = {name: info.get(name) for name in _INFO_FIELDS if info.get(name)}
    if extras:
        entry["info"] = json.loads(_canonical(extras))
    return entry


class _PlayedEpisode:
    """The env a harness plays in the bench: reset to the episode's task, every step logged as ``_play`` logs it.

    Env errors are kept (and raised to the harness) so the record says the env failed, not the agent.
    """

    def __init__(self, env: Any, seed: int | None, options: dict[str, Any] | None, limit: int,
                 trajectory: list[dict[str, Any]]) -> None:
        self.env, self.seed, self.options, self.limit, self.trajectory = env, seed, options, limit, trajectory
        self.reward, self.turns, self.ended = 0.0, 0, False
        self.task_id: Any = None
        self.done_reason: Any = None
        self.info: dict[str, Any] = {}
        self.reset_error: str | None = None
        self.step_error: str | None = None

    def __getattr__(self, name: str) -> Any:  # spaces, metadata, unwrapped, render ...
        return getattr(self.env, name)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset to the bench's task (the harness's own seed is ignored: the bench decides the task)."""
        try:
            observation, info = self.env.reset(seed=self.seed, options=self.options)
        except Exception as exc:
            self.reset_error = _error_text(exc)
            raise
        self.task_id, self.info = info.get("task_id"), dict(info)
        self.trajectory.append({"role": "env", "text": _text(observation, self.limit)})
        return observation, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """Step the env and log the agent's action and the env's answer."""
        self.trajectory.append(_agent_entry(action, self.limit))
        try:
            observation, reward, terminated, truncated, info = self.env.step(action)
        except Exception as exc:
            self.step_error = _error_text(exc)
            raise
        self.turns += 1
        self.reward += float(reward)
        self.info = dict(info)
        self.trajectory.append(_env_entry(observation, reward, info, self.limit))
        if terminated or truncated:
            self.ended = True
            self.done_reason = info.get("done_reason") or ("terminated" if terminated else "truncated")
        return observation, reward, terminated, truncated, info

    def close(self) -> None:
        """The bench closes the env; a harness's close does nothing."""


def _keep_frame(frames: list[Any], observation: Any, cfg: BenchConfig) -> None:
    """Keep a pixel observation (an ``(H, W, 3)`` uint8 array, or a dict's ``"pixels"``) for the video."""
    if not cfg.video or len(frames) >= cfg.max_video_frames:
        return
    pixels = observation.get("pixels") if isinstance(observation, Mapping) else observation
    shape = getattr(pixels, "shape", None)
    if shape is not None and len(shape) == 3 and shape[2] == 3 and str(getattr(pixels, "dtype", "")) == "uint8":
        frames.append(pixels)


def _write_video(out: Path, key: str, frames: Sequence[Any]) -> str | None:
    """The episode's frames as an animated GIF (at least 192 pixels wide); its path relative to ``out``."""
    try:
        from PIL import Image
    except ImportError:  # Pillow comes with the [browser] extra; without it there is no video
        return None
    height, width = frames[0].shape[:2]
    scale = max(1, 192 // max(width, 1))
    images = [Image.fromarray(frame).resize((width * scale, height * scale), Image.NEAREST) for frame in frames]
    relative = Path("videos") / f"{key}.gif"
    target = out / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".gif.tmp")
    images[0].save(tmp, format="GIF", save_all=True, append_images=images[1:], duration=120, loop=0)
    os.replace(tmp, target)
    return relative.as_posix()


async def _in_daemon_thread(fn: Callable[..., Any], *args: Any, timeout: float, what: str) -> Any:
    """Run a blocking call in a daemon thread under a deadline; on timeout the thread is abandoned.

    ``asyncio.to_thread`` would not do: its pool threads are joined at interpreter exit, so one
    hung agent would hang the whole command after the run had finished.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def deliver(setter: Callable[[Any], None], value: Any) -> None:
        if not future.done():
            setter(value)

    def target() -> None:
        try:
            result = fn(*args)
        except BaseException as exc:
            outcome: tuple[Callable[[Any], None], Any] = (future.set_exception, exc)
        else:
            outcome = (future.set_result, result)
        with contextlib.suppress(RuntimeError):  # the loop may be gone by the time a hung call returns
            loop.call_soon_threadsafe(deliver, *outcome)

    threading.Thread(target=target, name=f"agentrl-bench-{what}", daemon=True).start()
    try:
        return await asyncio.wait_for(future, timeout)
    except asyncio.TimeoutError:
        raise _AgentTimeout(f"agent did not {what} within {timeout:g}s") from None


def _acts_in_thread(agent: Any) -> bool:
    """Whether ``aact`` is missing or just ``BaseAgent``'s ``to_thread(act)`` (we use a daemon thread instead)."""
    from agentrl.agents.base import BaseAgent

    aact = getattr(type(agent), "aact", None)
    return aact is None or aact is BaseAgent.aact or not callable(aact)


async def _agent_action(agent: Any, observation: Any, info: dict[str, Any], timeout: float) -> Any:
    if _acts_in_thread(agent):
        return await _in_daemon_thread(agent.act, observation, info, timeout=timeout, what="act")
    try:
        result = agent.aact(observation, info)
        if inspect.isawaitable(result):
            result = await asyncio.wait_for(result, timeout)
        return result
    except asyncio.TimeoutError:
        raise _AgentTimeout(f"agent did not act within {timeout:g}s") from None


def _text(value: Any, limit: int) -> str:
    """A stored copy of an observation or action: non-strings as their repr, long texts cut in the middle.

    Arrays (pixel observations) are stored as their shape, dtype and a digest: the video shows them.
    """
    if isinstance(value, Mapping) and any(_is_array(v) for v in value.values()):
        return truncate_middle("{" + ", ".join(f"{k!r}: {_text(v, limit)}" for k, v in value.items()) + "}", limit)
    if _is_array(value):
        digest = hashlib.sha1(value.tobytes()).hexdigest()[:12]
        return f"<array shape={tuple(value.shape)} dtype={value.dtype} sha1={digest}>"
    text = value if isinstance(value, str) else repr(value)
    return truncate_middle(text, limit)


def _is_array(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "tobytes") and len(getattr(value, "shape", ())) >= 2


def _usage(agent: Any) -> tuple[int, int]:
    usage = getattr(agent, "usage", None)
    if not isinstance(usage, Mapping):
        return 0, 0
    try:
        return int(usage.get("prompt_tokens", 0) or 0), int(usage.get("completion_tokens", 0) or 0)
    except (TypeError, ValueError):
        return 0, 0


def _infrastructure_exception(exc: BaseException) -> bool:
    """A sandbox or a dependency that is not there: the system's fault, not the agent's."""
    from agentrl.core.errors import DependencyNotInstalled, SandboxUnavailable

    seen: BaseException | None = exc
    for _ in range(5):  # the cause chain, a few links deep
        if seen is None:
            return False
        if isinstance(seen, (DependencyNotInstalled, SandboxUnavailable)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, _AgentTimeout):
        return str(exc)
    where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    at = f" (at {Path(where[0].filename).name}:{where[0].lineno})" if where else ""
    message = str(exc) or "(no message)"
    return truncate_middle(f"{type(exc).__name__}: {message}{at}", 2000)


def _drift_since(records: Any, locks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """What moved since the results already in OUT were recorded, for this command's envs and agent.

    One line per env: a changed env gives new episode keys, so its episodes run again, and this says why.
    """
    lines = []
    for env_id, lock in locks.items():
        drift: dict[str, None] = {}
        for record in records:
            old = record.get("lock")
            if record.get("env_id") != env_id or not isinstance(old, Mapping) or old.get("agent") != lock["agent"]:
                continue
            drift.update(dict.fromkeys(lock_drift(old, lock)))
        if drift:
            lines.append(f"since earlier results of this agent on {env_id} were recorded: {'; '.join(drift)}")
    return lines


class _Runner:
    def __init__(self, config: BenchConfig) -> None:
        self.config = config
        self.out = Path(config.out)
        self.agent_config = config.agent.config()
        self.env_kwargs = json.loads(_canonical(dict(config.env_kwargs)))
        self.fingerprints = {env_id: env_fingerprint(env_id, self.env_kwargs) for env_id in config.env_ids}
        self.locks = {env_id: env_lock(env_id, self.env_kwargs, self.agent_config) for env_id in config.env_ids}
        self.store = ResultStore(self.out / RESULTS_FILE)
        self.builder: Any = None
        self.errors = 0
        self._progress: Any = None

    # -- the whole run ---------------------------------------------------------------------
    async def run(self, pending: list[EpisodeSpec], builder: Any) -> None:
        loop = asyncio.get_running_loop()
        # Env steps and appends run in this pool; the default one is too small for --concurrency 16
        # on a 2-core machine.
        executor = ThreadPoolExecutor(max_workers=self.config.concurrency + 2, thread_name_prefix="agentrl-bench-env")
        loop.set_default_executor(executor)
        self.builder = builder
        # Create a shared LLM backend once, up front, with no deadline: loading weights is slow.
        if getattr(type(builder), "backend", None) is not None:
            await asyncio.to_thread(getattr, builder, "backend")
        queue = list(reversed(pending))
        workers = min(self.config.concurrency, len(pending))
        await asyncio.gather(*(self._slot(queue) for _ in range(workers)))

    async def _slot(self, queue: list[EpisodeSpec]) -> None:
        import gymnasium as gym

        env: Any = None
        env_id: str | None = None
        try:
            while queue:
                spec = queue.pop()
                if env is not None and env_id != spec.env_id:
                    await self._close_env(env)
                    env = None
                record: dict[str, Any]
                if env is None:
                    try:
                        env = await asyncio.to_thread(gym.make, spec.env_id, **self.env_kwargs)
                        env_id = spec.env_id
                    except Exception as exc:
                        record = self._record(spec, started=time.time(), wall=0.0, trajectory=[], reward=0.0,
                                              success=False, turns=0, task_id=None, done_reason=None,
                                              tokens=(0, 0), error=f"could not make the env: {_error_text(exc)}",
                                              error_kind="env", error_class=INFRASTRUCTURE)
                        await self._finish(record)
                        continue
                record, env_ok = await self._play(env, spec)
                if not env_ok:
                    await self._close_env(env)
                    env = None
                await self._finish(record)
        finally:
            if env is not None:
                await self._close_env(env)

    @staticmethod
    async def _close_env(env: Any) -> None:
        with contextlib.suppress(Exception):
            await asyncio.to_thread(env.close)

    async def _finish(self, record: dict[str, Any]) -> None:
        # fsync can take a while on slow disks: keep it off the event loop.
        await asyncio.to_thread(self.store.append, record)
        if record["error"]:
            self.errors += 1
        if self._progress is not None:
            self._progress.update(1)
            if self.errors:
                self._progress.set_postfix(errors=self.errors, refresh=False)

    # -- one episode -----------------------------------------------------------------------
    async def _play(self, env: Any, spec: EpisodeSpec) -> tuple[dict[str, Any], bool]:
        """Play one episode; returns its record and whether the env is still usable."""
        from agentrl.core.errors import InvalidActionType

        cfg = self.config
        limit, timeout = cfg.max_text_chars, cfg.action_timeout
        started, clock = time.time(), time.perf_counter()
        trajectory: list[dict[str, Any]] = []
        reward_total, turns, task_id, done_reason = 0.0, 0, None, None
        info: dict[str, Any] = {}
        error: str | None = None
        error_kind: str | None = None
        error_cls: str | None = None
        env_ok = True
        agent: Any = None
        try:
            agent = await _in_daemon_thread(self.builder, spec.agent_seed, timeout=timeout, what="get built")
            from agentrl.agents.base import bind_agent

            await _in_daemon_thread(bind_agent, agent, env, timeout=timeout, what="bind to the env")
            options = {"task_id": spec.task_id} if spec.task_id is not None else None
            if getattr(agent, "plays_episodes", False):  # a harness: it resets and steps the env itself
                played = _PlayedEpisode(env, spec.reset_seed, options, limit, trajectory)
                turns_budget = int(getattr(env.unwrapped, "max_turns", 0) or 50)
                await _in_daemon_thread(agent.play, played, timeout=timeout * turns_budget, what="play")
                if played.reset_error is not None:
                    raise _EnvFailure(f"env.reset failed: {played.reset_error}")
                if played.step_error is not None:
                    raise _EnvFailure(f"env.step failed: {played.step_error}")
                reward_total, turns, task_id, info = played.reward, played.turns, played.task_id, played.info
                if not played.ended:
                    raise ValueError(
                        "the harness returned before the episode ended: run_episode must step the env until it "
                        f"is terminated or truncated ({turns} steps taken)"
                    )
                done_reason = played.done_reason
                failure = env_failure(info)
                if failure is not None:
                    raise _EnvFailure(failure)
            else:  # the bench plays the turns: reset, then ask the agent and step until the episode ends
                try:
                    observation, info = await asyncio.to_thread(env.reset, seed=spec.reset_seed, options=options)
                except Exception as exc:
                    raise _EnvFailure(f"env.reset failed: {_error_text(exc)}") from exc
                task_id = info.get("task_id")
                frames: list[Any] = []
                _keep_frame(frames, observation, cfg)
                trajectory.append({"role": "env", "text": _text(observation, limit)})
                await _in_daemon_thread(agent.reset, info, timeout=timeout, what="reset")
                while True:
                    action_clock = time.perf_counter()
                    action = await _agent_action(agent, observation, info, timeout)
                    trajectory.append(_agent_entry(action, limit, seconds=time.perf_counter() - action_clock))
                    try:
                        observation, reward, terminated, truncated, info = await asyncio.to_thread(env.step, action)
                    except InvalidActionType as exc:
                        # The env refused the action before touching its state: it stays usable.
                        raise ValueError(f"the agent's action was not accepted: {exc}") from None
                    except Exception as exc:
                        raise _EnvFailure(f"env.step failed: {_error_text(exc)}") from exc
                    turns += 1
                    reward_total += float(reward)
                    _keep_frame(frames, observation, cfg)
                    trajectory.append(_env_entry(observation, reward, info, limit))
                    if terminated or truncated:
                        done_reason = info.get("done_reason") or ("terminated" if terminated else "truncated")
                        failure = env_failure(info)  # the env's own machinery failed (a crashed page, a dead display)
                        if failure is not None:
                            raise _EnvFailure(failure)
                        break
        except _AgentTimeout as exc:
            error, error_kind, error_cls = str(exc), "timeout", AGENT
            env_ok = False  # the abandoned thread may still touch the env: give the slot a fresh one
        except _EnvFailure as exc:
            error, error_kind, error_cls, env_ok = str(exc), "env", INFRASTRUCTURE, False
        except Exception as exc:
            error, error_kind = _error_text(exc), "agent"
            error_cls = INFRASTRUCTURE if _infrastructure_exception(exc) else AGENT
        wall = time.perf_counter() - clock
        if error is None:
            success = episode_success(info, reward_total, cfg.success_threshold)
        else:
            trajectory.append({"role": "error", "text": error})
            reward_total, success = 0.0, False
        record = self._record(spec, started=started, wall=wall, trajectory=trajectory, reward=reward_total,
                              success=success, turns=turns, task_id=task_id, done_reason=done_reason,
                              tokens=_usage(agent), error=error, error_kind=error_kind, error_class=error_cls)
        components = info.get("reward_components") if error is None and isinstance(info, dict) else None
        if isinstance(components, dict) and components:  # the score's parts (HealthBench's unclipped score...)
            record["reward_components"] = json_safe(components)
        video_frames = locals().get("frames") or []
        if video_frames:
            video = await asyncio.to_thread(_write_video, Path(cfg.out), spec.key, video_frames)
            if video:
                record["video"] = video
        return record, env_ok

    def _record(self, spec: EpisodeSpec, *, started: float, wall: float, trajectory: list[dict[str, Any]],
                reward: float, success: bool, turns: int, task_id: Any, done_reason: Any,
                tokens: tuple[int, int], error: str | None, error_kind: str | None,
                error_class: str | None = None) -> dict[str, Any]:
        import agentrl

        return json_safe({
            "format": RECORD_FORMAT,
            "key": spec.key,
            "env_id": spec.env_id,
            "env_version": env_version(spec.env_id),
            "env_fingerprint": self.fingerprints[spec.env_id],
            "lock": self.locks[spec.env_id],
            "env_kwargs": self.env_kwargs,
            "agent": self.agent_config,
            "seed": spec.seed,
            "episode": spec.index,
            "attempt": spec.attempt,
            "reset_seed": spec.reset_seed,
            "agent_seed": spec.agent_seed,
            "task_id": None if task_id is None else str(task_id),
            "reward": float(reward) if math.isfinite(reward) else 0.0,
            "success": bool(success),
            "turns": turns,
            "done_reason": None if done_reason is None else str(done_reason),
            "prompt_tokens": tokens[0],
            "completion_tokens": tokens[1],
            "tokens": tokens[0] + tokens[1],
            "wall_s": round(wall, 4),
            "error": error,
            "error_kind": error_kind,
            "error_class": error_class if error else None,
            "started_at": _dt.datetime.fromtimestamp(started, _dt.timezone.utc).isoformat(timespec="seconds"),
            "agentrl_version": agentrl.__version__,
            "trajectory": trajectory,
        })


def _write_json_atomically(path: Path, payload: Mapping[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _pending(plan: list[EpisodeSpec], loaded: LoadedResults, retry_errors: bool) -> list[EpisodeSpec]:
    """The episodes to play: not in the file, ended in an infrastructure error, or (``retry_errors``) an agent error."""

    def done(key: str) -> bool:
        record = loaded.records.get(key)
        if record is None:
            return False
        kind = error_class(record)
        return kind is None or (kind == AGENT and not retry_errors)

    return [spec for spec in plan if not done(spec.key)]


_APT_ONE = re.compile(r"^((?:sudo )?apt-get install -y(?: --no-install-recommends)?) (\S+)$")
_NO_APT_ONE = re.compile(r"^no apt-get here: install the Debian package '([^']+)' \(or your system's equivalent\)$")


def merge_install_commands(commands: Sequence[str]) -> list[str]:
    """One-package ``apt-get install`` lines (as ``_system_deps`` prints them) merged into one per flavour.

    >>> merge_install_commands(["apt-get install -y xvfb", "apt-get install -y xterm", "npm install x",
    ...                         "apt-get install -y --no-install-recommends at-spi2-core", "apt-get install -y xvfb"])
    ['apt-get install -y xvfb xterm', 'npm install x', 'apt-get install -y --no-install-recommends at-spi2-core']
    """
    merged: dict[str, list[str]] = {}
    for command in commands:
        apt, no_apt = _APT_ONE.match(command), _NO_APT_ONE.match(command)
        if apt:
            packages = merged.setdefault(apt.group(1), [])
            packages.extend(p for p in [apt.group(2)] if p not in packages)
        elif no_apt:
            packages = merged.setdefault("no apt-get here", [])
            packages.extend(p for p in [no_apt.group(1)] if p not in packages)
        else:
            merged.setdefault(command, [])
    return [
        f"no apt-get here: install the Debian packages {' '.join(packages)} (or your system's equivalents)"
        if head == "no apt-get here" else " ".join([head, *packages])
        for head, packages in merged.items()
    ]


def _skip_entries(missing: Mapping[str, Sequence[Any]], runner_agent: Any, env_kwargs: Any,
                  command: Sequence[str] | None) -> list[dict[str, Any]]:
    """The ``skipped.json`` entries of the envs whose system parts are missing."""
    entries = []
    for env_id, parts in missing.items():
        names = ", ".join(part.part for part in parts)
        fixes = merge_install_commands([part.fix for part in parts if part.fix])
        entries.append({
            "env_id": env_id,
            "agent": runner_agent,
            "env_kwargs": env_kwargs,
            "missing": [{"part": part.part, "package": part.package, "fix": part.fix} for part in parts],
            "reason": f"system part{'s' if len(parts) > 1 else ''} missing: {names}",
            "fix": fixes,
            "command": list(command) if command is not None else None,
        })
    return entries


def _say_skips(entries: Sequence[Mapping[str, Any]], say: Callable[[str], None]) -> None:
    """One message per distinct reason: the envs, the missing parts and the install commands."""
    by_reason: dict[str, list[Mapping[str, Any]]] = {}
    for entry in entries:
        by_reason.setdefault(entry["reason"], []).append(entry)
    for reason, members in by_reason.items():
        ids = [m["env_id"] for m in members]
        shown = ", ".join(ids[:4]) + (f" and {len(ids) - 4} more" if len(ids) > 4 else "")
        fixes = list(dict.fromkeys(fix for m in members for fix in m.get("fix") or []))
        say(f"skipping {len(ids)} env(s) ({shown}): {reason}")
        for fix in fixes:
            say(f"  install with: {fix}")
        say("  then run this command again (skipped envs are listed in the report)")


def run_bench(config: BenchConfig, log: Callable[[str], None] | None = None) -> BenchOutcome:
    """Run (or resume) a benchmark; write results, ``run.json`` and ``report.html``.

    Args:
        config: what to run.
        log: where progress messages go (default: print to stdout).

    Returns:
        What ran, and every result now in the file (for the summary table).

    Raises:
        ValueError: a bad option; gymnasium errors for unknown env ids; ``RuntimeError`` when
            another run holds the output directory.
    """
    say = log or (lambda message: print(message, flush=True))
    config.validate()
    out = Path(config.out)
    clock = time.perf_counter()
    with RunLock(out):
        agent_config = json.loads(_canonical(config.agent.config()))
        env_kwargs = json.loads(_canonical(dict(config.env_kwargs)))
        skips: list[dict[str, Any]] = []
        if config.system_parts is not None:
            from agentrl.bench.suites import missing_requirements

            missing = missing_requirements(list(config.env_ids), env_kwargs, list(config.system_parts))
            skips = _skip_entries(missing, agent_config, env_kwargs, config.command)
        skip_log = SkipLog(out)
        if skips:
            _say_skips(skips, say)
            skip_log.record(skips)
        skipped_ids = {entry["env_id"] for entry in skips}
        run_ids = [env_id for env_id in config.env_ids if env_id not in skipped_ids]
        skip_log.forget(run_ids, agent_config, env_kwargs)
        runner = _Runner(dataclasses.replace(config, env_ids=run_ids))
        loaded = runner.store.load()
        for problem in loaded.problems:
            print(f"warning: {problem}", file=sys.stderr, flush=True)
        sweeps = _load_sweeps(run_ids, runner) if config.all_tasks else {}
        if config.all_tasks:
            plan = plan_sweep({env_id: d.task_ids for env_id, d in sweeps.items()}, runner.agent_config,
                              runner.env_kwargs, config.seeds[0], config.k, runner.fingerprints)
        else:
            plan = plan_episodes(run_ids, runner.agent_config, runner.env_kwargs, config.episodes,
                                 list(config.seeds), config.k, runner.fingerprints)
        pending = _pending(plan, loaded, config.retry_errors)
        healed = sum(1 for spec in pending if error_class(loaded.records.get(spec.key) or {}) == INFRASTRUCTURE)
        kept = sum(1 for spec in plan if error_class(loaded.records.get(spec.key) or {}) == AGENT
                   and not config.retry_errors)
        total, done = len(plan), len(plan) - len(pending)
        for line in _drift_since(loaded.records.values(), runner.locks):
            say(line)
        _write_json_atomically(out / "run.json", {
            "command": list(config.command) if config.command is not None else None,
            "env_ids": list(config.env_ids),
            "skipped_env_ids": sorted(skipped_ids),
            "env_kwargs": runner.env_kwargs,
            "env_fingerprints": runner.fingerprints,
            "locks": runner.locks,
            "agent": runner.agent_config,
            "episodes": config.episodes,
            "seeds": list(config.seeds),
            "k": config.k,
            "concurrency": config.concurrency,
            "action_timeout": config.action_timeout,
            "total_episodes": total,
            "all_tasks": config.all_tasks,
            **({"datasets": {env_id: d.as_json() for env_id, d in sweeps.items()}} if config.all_tasks else {}),
            "updated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        })
        if not run_ids:
            say("nothing to run: every env of this command was skipped")
        elif not pending:
            say(f"all {total} episodes already done; nothing to run ({out / RESULTS_FILE})"
                + (f"; {kept} ended in an agent error (--retry-errors runs them again)" if kept else ""))
        else:
            retried = sum(1 for spec in pending if error_class(loaded.records.get(spec.key) or {}) == AGENT)
            notes = []
            if healed:
                notes.append(f"{healed} again after an infrastructure error")
            if retried:
                notes.append(f"{retried} again after an agent error (--retry-errors)")
            if kept:
                notes.append(f"{kept} agent error(s) kept: --retry-errors runs them again")
            note = f" ({'; '.join(notes)})" if notes else ""
            if done:
                say(f"{done} of {total} episodes already done; running {len(pending)}{note}")
            elif config.all_tasks:
                tasks = " + ".join(f"{len(d.task_ids)} tasks of {d.card.name}" for d in sweeps.values())
                say(f"sweeping {total} episodes ({tasks}, in dataset order, x k={config.k}) with concurrency "
                    f"{config.concurrency}{note}")
            else:
                say(f"running {total} episodes ({len(run_ids)} env(s) x {len(config.seeds)} seed(s) x "
                    f"{config.episodes} episode(s) x k={config.k}) with concurrency {config.concurrency}{note}")
            from tqdm import tqdm

            # Building resolves the agent class: a bad import path fails here, before any episode.
            builder = config.agent.build()
            try:
                with tqdm(total=len(pending), file=sys.stderr, disable=not config.progress, unit="ep",
                          desc="bench", dynamic_ncols=True) as bar:
                    runner._progress = bar
                    asyncio.run(runner.run(pending, builder))
            finally:
                runner.store.close()
                builder.close()
        final = runner.store.load() if pending else loaded
        records = list(final.records.values())
        planned = [final.records[spec.key] for spec in plan if spec.key in final.records]
        report_path = None
        if config.report:
            from agentrl.bench.report import write_report

            report_path = write_report(records, out / "report.html", problems=final.problems, skipped=skip_log.load())
        scores: list[dict[str, Any]] = []
        score_path = None
        if config.all_tasks:
            from agentrl.bench.sweep import sweep_score, write_score_file

            for env_id, dataset in sweeps.items():
                episodes = [(spec.task_id or "", spec.attempt, final.records.get(spec.key))
                            for spec in plan if spec.env_id == env_id]
                scores.append(sweep_score(dataset, episodes, config.k))
            score_path = write_score_file(out, scores, runner.agent_config, config.command)
    return BenchOutcome(total=total, already_done=done, ran=len(pending), errors=runner.errors, records=records,
                        problems=final.problems, wall_s=time.perf_counter() - clock, out=out, report_path=report_path,
                        planned=planned, skipped=skips, healed=healed, sweeps=scores, score_path=score_path)


def _load_sweeps(env_ids: Sequence[str], runner: _Runner) -> dict[str, Any]:
    """Each env's dataset (task ids in order, card, file hashes); its content hash joins the env's fingerprint.

    So a changed dataset file gives new episode keys: stale results are never scored with new ones.
    """
    from agentrl.bench.sweep import load_sweep_dataset

    sweeps = {}
    for env_id in env_ids:
        dataset = load_sweep_dataset(env_id, runner.env_kwargs)
        sweeps[env_id] = dataset
        mixed = f"{runner.fingerprints[env_id]}:{dataset.content_sha256}".encode()
        runner.fingerprints[env_id] = hashlib.sha256(mixed).hexdigest()[:16]
    return sweeps
