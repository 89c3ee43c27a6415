"""``agentrl bench --regrade RUN``: score a stored run again, against the env as it is now.

A benchmark's grading moves: a gold answer is fixed, a grader rule tightened, a task file replaced. Old scores then
mean something else, and the question is which episodes it changes. Regrading answers it episode by episode: each
finished episode of RUN is played again on the env as it is now, from the same task (the recorded reset seed, and
the task id of a dataset sweep), with the agent's recorded actions, and the env's verifier scores them. Where the
env is deterministic this reproduces the episode exactly; where it is not (an LLM patient, a live page), the replay
shows the verifier the same actions, and the record says at which turn the observations first differed.

Every episode whose verdict (success) flips is listed with why: what moved in its env lock since it was recorded
(:mod:`agentrl.bench.lock`: the code, a data file, the judge, a library), and what the replay saw (the episode now
ends sooner, or not at all). Episodes that cannot be replayed say why too: an action stored cut (longer than the
run's ``max_text_chars``), an action that was not text (a game's move object), or an episode that ended in an error.

>>> flips = Regraded(key="k", env_id="E", seed=0, episode=3, attempt=0, task_id="t3", old_reward=1.0,
...                  new_reward=0.0, old_success=True, new_success=False, status="flipped", why="data changed")
>>> flips.verdict
'success -> failure'
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agentrl.bench.lock import env_lock, lock_drift
from agentrl.bench.results import load_run

__all__ = ["REGRADE_FILE", "RegradeResult", "Regraded", "format_regrade", "regrade_run"]

#: the JSON file ``--regrade`` writes into the run's folder
REGRADE_FILE = "regrade.json"
#: what :func:`agentrl.core.text.truncate_middle` leaves in a stored text it cut
_CUT = " chars cut] ..."


@dataclass(frozen=True)
class Regraded:
    """One episode of the stored run, scored again."""

    key: str
    env_id: str
    seed: Any
    episode: Any
    attempt: Any
    task_id: Any
    old_reward: float
    new_reward: float
    old_success: bool
    new_success: bool
    status: str
    """``same``, ``flipped``, ``reward changed`` (same verdict) or ``not regraded``"""
    why: str

    @property
    def verdict(self) -> str:
        """``success -> failure``, ``failure -> success``, or the one verdict both runs gave."""
        if self.old_success == self.new_success:
            return "success" if self.new_success else "failure"
        return f"{'success' if self.old_success else 'failure'} -> {'success' if self.new_success else 'failure'}"


@dataclass
class RegradeResult:
    """Every episode of the run, and each env's drift since it was recorded."""

    run: str
    episodes: list[Regraded] = field(default_factory=list)
    drift: dict[str, list[str]] = field(default_factory=dict)

    @property
    def flipped(self) -> list[Regraded]:
        """The episodes whose verdict changed."""
        return [e for e in self.episodes if e.status == "flipped"]

    def as_json(self) -> dict[str, Any]:
        """What ``regrade.json`` holds."""
        counts: dict[str, int] = {}
        for e in self.episodes:
            counts[e.status] = counts.get(e.status, 0) + 1
        return {"run": self.run, "counts": counts, "drift": self.drift,
                "episodes": [{**asdict(e), "verdict": e.verdict} for e in self.episodes]}


def _replay(env: Any, record: Mapping[str, Any], threshold: float) -> tuple[float, bool, list[str]]:
    """Play the record's actions on ``env`` from its task; the return, the verdict and what differed."""
    from agentrl.bench.runner import BenchConfig, _text, episode_success

    limit = BenchConfig.max_text_chars  # the cap the run stored its texts with (its default)

    trajectory = [t for t in record.get("trajectory") or [] if isinstance(t, Mapping)]
    actions = [str(t.get("text", "")) for t in trajectory if t.get("role") == "agent"]
    recorded = [str(t.get("text", "")) for t in trajectory if t.get("role") == "env"]
    options = {"task_id": record["task_id"]} if record.get("task_id") is not None else None
    if options is not None and not _takes_task_ids(env):
        options = None  # a generator's task id is a label: the reset seed alone picks the task
    observation, info = env.reset(seed=record.get("reset_seed"), options=options)
    notes: list[str] = []
    seen = [_text(observation, limit)]
    total, ended = 0.0, False
    for turn, action in enumerate(actions, 1):
        observation, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        seen.append(_text(observation, limit))
        if terminated or truncated:
            ended = True
            if turn < len(actions):
                notes.append(f"the episode now ends after {turn} of its {len(actions)} actions")
            break
    if not ended:
        notes.append(f"the episode no longer ends after its {len(actions)} actions (counted a failure)")
    # the last observation carries the verdict itself: a difference before it is the env's, not the grading's
    compared = min(len(recorded), len(seen)) - 1
    first = next((i for i in range(compared) if recorded[i] != seen[i]), None)
    if first is not None:
        notes.append(f"observation {first} differs from the recorded one (the env changed or is not deterministic)")
    success = ended and episode_success(info, total, threshold)
    return total, success, notes


def _takes_task_ids(env: Any) -> bool:
    return callable(getattr(getattr(env, "unwrapped", env), "task_ids", None))


def _not_replayable(record: Mapping[str, Any]) -> str | None:
    if record.get("error"):
        return f"the episode ended in an error ({str(record['error'])[:80]})"
    trajectory = record.get("trajectory")
    if not isinstance(trajectory, list) or not trajectory:
        return "no trajectory recorded"
    for entry in trajectory:
        if isinstance(entry, Mapping) and entry.get("role") == "agent":
            if entry.get("type"):
                return f"an action was a {entry['type']}, not text: it cannot be replayed from its stored copy"
            if _CUT in str(entry.get("text", "")):
                return "an action was stored cut (longer than the run's max_text_chars)"
    return None


def regrade_run(run: str | os.PathLike[str], threshold: float = 1.0, write: bool = True) -> RegradeResult:
    """Score every episode of ``run`` (an output folder or results file) again on the env as it is now.

    ``threshold``: the return at or above which an episode without a boolean ``info["success"]`` is a success
    (the bench's default). ``write``: also write :data:`REGRADE_FILE` beside the results.

    Raises:
        FileNotFoundError: the run has no results file.
    """
    import gymnasium as gym

    import agentrl  # noqa: F401  (registers the built-in ids)

    loaded = load_run(run)
    result = RegradeResult(str(run))
    envs: dict[str, Any] = {}
    locks: dict[str, dict[str, Any]] = {}
    try:
        for record in loaded:
            env_id = str(record.get("env_id"))
            kwargs = dict(record.get("env_kwargs") or {})
            slot = json.dumps([env_id, kwargs], sort_keys=True, default=str)
            if slot not in locks:
                locks[slot] = env_lock(env_id, kwargs, record.get("agent"))
            drift = lock_drift(record.get("lock"), locks[slot])
            if drift:
                result.drift[env_id] = list(dict.fromkeys([*result.drift.get(env_id, []), *drift]))
            old_reward, old_success = float(record.get("reward", 0.0) or 0.0), bool(record.get("success"))
            base = {"key": str(record.get("key")), "env_id": env_id, "seed": record.get("seed"),
                    "episode": record.get("episode"), "attempt": record.get("attempt"),
                    "task_id": record.get("task_id"), "old_reward": old_reward, "old_success": old_success}
            reason = _not_replayable(record)
            if reason is None:
                try:
                    if slot not in envs:
                        envs[slot] = gym.make(env_id, **kwargs)
                    new_reward, new_success, notes = _replay(envs[slot], record, threshold)
                except Exception as exc:  # the env as it is now refuses the episode: say so, go on
                    reason = f"the replay failed: {type(exc).__name__}: {str(exc)[:200]}"
            if reason is not None:
                result.episodes.append(Regraded(**base, new_reward=old_reward, new_success=old_success,
                                                status="not regraded", why=reason))
                continue
            if new_success != old_success:
                status = "flipped"
            elif not math.isclose(new_reward, old_reward, abs_tol=1e-9):
                status = "reward changed"
            else:
                status = "same"
            why = "; ".join([*notes, *drift]) if status != "same" else ""
            if status != "same" and not why:
                why = "no drift recorded: the env is not deterministic, or its lock misses what changed"
            result.episodes.append(Regraded(**base, new_reward=new_reward, new_success=new_success, status=status,
                                            why=why))
    finally:
        for env in envs.values():
            env.close()
    if write:
        folder = Path(run) if Path(run).is_dir() else Path(run).parent
        (folder / REGRADE_FILE).write_text(json.dumps(result.as_json(), indent=1, default=str) + "\n")
    return result


def format_regrade(result: RegradeResult, limit: int = 50) -> str:
    """The text ``--regrade`` prints: counts, the drift per env, then the episodes that changed.

    Flipped ones, those whose reward alone changed and those that could not be replayed, up to ``limit`` rows.
    """
    counts: dict[str, int] = {}
    for e in result.episodes:
        counts[e.status] = counts.get(e.status, 0) + 1
    lines = [f"regraded {len(result.episodes)} episode(s) of {result.run}: "
             + ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))]
    for env_id, drift in result.drift.items():
        lines.append(f"drift since recorded, {env_id}: {'; '.join(drift)}")
    shown: Sequence[Regraded] = [e for e in result.episodes if e.status != "same"]
    if shown:
        header = ["status", "env", "seed", "episode", "attempt", "task", "verdict", "reward", "why"]
        rows = [[e.status, e.env_id, str(e.seed), str(e.episode), str(e.attempt), str(e.task_id or "-"), e.verdict,
                 f"{e.old_reward:.3f} -> {e.new_reward:.3f}", e.why] for e in shown[:limit]]
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        for row in [header, ["-" * w for w in widths], *rows]:
            lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if len(shown) > limit:
            lines.append(f"... {len(shown) - limit} more in {REGRADE_FILE}")
    else:
        lines.append("no verdict or reward changed")
    return "\n".join(lines)
