"""Full-dataset sweeps (``agentrl bench --all-tasks``): every task once, in order, scored as the benchmark scores it.

A sampled run draws tasks by derived seeds, with replacement; a standard score (Spider dev, GSM8K test,
an OSWorld task list) needs each task of the dataset exactly once. An env that can be swept is a
:class:`~agentrl.core.dataset.TaskDataset`: it lists its task ids in order and names its dataset
(:class:`~agentrl.core.dataset.DatasetCard`). This module

* reads that list and card from one env instance (:func:`load_sweep_dataset`);
* plans one episode per (task, attempt), keyed by the task id and the dataset's content hash, so that
  re-running the command skips finished pairs and a changed file starts afresh (:func:`plan_sweep`);
* computes the benchmark's own score from the records: the mean over attempts of EX, accuracy, success
  rate or EM, pass@k, or HealthBench's clipped mean (:func:`sweep_score`), and writes ``score.json``.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrl.core.aggregates import aggregate_for
from agentrl.core.dataset import DatasetCard, NoTaskDataset, TaskDataset, combine_sha256, sha256_file

__all__ = [
    "SCORE_FILE",
    "SweepDataset",
    "check_split_supported",
    "format_sweep_lines",
    "load_sweep_dataset",
    "sweep_env_ids",
    "sweep_score",
    "write_score_file",
]

#: the sweep's score, next to results.jsonl
SCORE_FILE = "score.json"


@dataclass(frozen=True)
class SweepDataset:
    """One env's dataset as a sweep sees it: its card, its task ids in order, and content hashes."""

    env_id: str
    card: DatasetCard
    task_ids: tuple[str, ...]
    #: ``(path, sha256)`` of every file of the card, hashed once
    file_hashes: tuple[tuple[str, str], ...]

    @classmethod
    def read(cls, env_id: str, card: DatasetCard, task_ids: Sequence[str]) -> SweepDataset:
        """Hash the card's files (once) and keep the task ids."""
        return cls(env_id, card, tuple(task_ids), tuple((path, sha256_file(path)) for path in card.files))

    @property
    def sha256(self) -> str:
        """The sha256 of the dataset's ``path``: the file's own, or (a folder) the combined hash of its files."""
        own = dict(self.file_hashes).get(self.card.path)
        return own if own is not None else self.content_sha256

    @property
    def content_sha256(self) -> str:
        """One sha256 over every file that decides the tasks and their gold answers."""
        return combine_sha256(self.file_hashes)

    def as_json(self) -> dict[str, Any]:
        """The ``dataset`` entry of ``score.json`` and ``run.json``."""
        return {
            "name": self.card.name,
            "path": self.card.path,
            "sha256": self.sha256,
            "split": self.card.split,
            "tasks": len(self.task_ids),
            "content_sha256": self.content_sha256,
            "files": [{"path": path, "sha256": sha} for path, sha in self.file_hashes],
        }


def _entry_class(env_id: str) -> Any:
    import gymnasium as gym

    entry = gym.spec(env_id).entry_point
    if isinstance(entry, str):
        module, _, name = entry.partition(":")
        return getattr(importlib.import_module(module), name, None)
    return entry


def sweep_env_ids() -> list[str]:
    """The registered AgentRL ids whose env is a :class:`~agentrl.core.dataset.TaskDataset` (``--all-tasks`` runs them).

    >>> "AgentRL/SQL-v0" in sweep_env_ids() and "AgentRL/FlashGame-Catch-v0" not in sweep_env_ids()
    True
    """
    import agentrl  # noqa: F401  (registers the built-in ids)
    from agentrl.core.registry import registered_domains

    found = []
    for spec in registered_domains():
        cls = _entry_class(spec.env_id)
        if isinstance(cls, type) and issubclass(cls, TaskDataset):
            found.append(spec.env_id)
    return found


def check_split_supported(env_ids: Sequence[str]) -> None:
    """``--split`` is an env's ``split`` argument: raise ``ValueError`` naming the envs that take one.

    >>> check_split_supported(["AgentRL/SQL-v0"])
    >>> check_split_supported(["AgentRL/TIRMath-v0"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: AgentRL/TIRMath-v0's dataset has no named splits (...); --split is for AgentRL/OSWorld-v0, ...
    """
    import agentrl  # noqa: F401  (registers the built-in ids)
    from agentrl.core.registry import registered_domains

    def takes_split(env_id: str) -> bool:
        cls = _entry_class(env_id)
        return cls is not None and "split" in inspect.signature(cls).parameters

    for env_id in env_ids:
        if not takes_split(env_id):
            with_splits = [spec.env_id for spec in registered_domains() if takes_split(spec.env_id)]
            raise ValueError(f"{env_id}'s dataset has no named splits (point its dataset option at the split's file); "
                             f"--split is for {', '.join(with_splits)}")


def load_sweep_dataset(env_id: str, env_kwargs: Mapping[str, Any]) -> SweepDataset:
    """Make the env once, read its task ids and dataset card, close it.

    Raises:
        ValueError: the env has no enumerable dataset (the message says which option gives it one, or
            names the envs that support ``--all-tasks``), or its dataset is empty.
    """
    import gymnasium as gym

    env = gym.make(env_id, **env_kwargs)
    try:
        base = env.unwrapped
        if not isinstance(base, TaskDataset):
            raise ValueError(f"{env_id} has no enumerable dataset, so --all-tasks cannot sweep it; --all-tasks "
                             f"supports: {', '.join(sweep_env_ids())}")
        try:
            card = base.dataset_card()
            task_ids = tuple(base.task_ids())
        except NoTaskDataset as exc:
            raise ValueError(f"{exc} (--all-tasks supports: {', '.join(sweep_env_ids())})") from None
    finally:
        env.close()
    if not task_ids:
        raise ValueError(f"{env_id}: the dataset {card.path} has no tasks")
    if len(set(task_ids)) != len(task_ids):
        raise ValueError(f"{env_id}: the dataset {card.path} repeats task ids; a sweep needs each id once")
    return SweepDataset.read(env_id, card, task_ids)


def _value(record: Mapping[str, Any], score_from: str) -> float | None:
    if record.get("error"):  # an episode that ended in an error scores 0, whatever the metric
        return 0.0
    if score_from == "success":
        return 1.0 if record.get("success") else 0.0
    if score_from == "reward":
        return float(record.get("reward", 0.0) or 0.0)
    components = record.get("reward_components")  # score_from names a reward component (healthbench_score...)
    value = components.get(score_from) if isinstance(components, Mapping) else None
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def _aggregate(values: Sequence[float | None], score_from: str) -> float | None:
    """The metric over episodes' values; ``None`` when there is none (JSON has no NaN)."""
    registered = aggregate_for(score_from)
    if registered is not None:  # the domain's own aggregate (HealthBench: the clipped mean)
        result = registered.load()(values)
        score = float(getattr(result, "score", result))
    else:
        kept = [v for v in values if v is not None]
        score = math.fsum(kept) / len(kept) if kept else math.nan
    return None if math.isnan(score) else score


def sweep_score(dataset: SweepDataset, episodes: Sequence[tuple[str, int, Mapping[str, Any] | None]],
                k: int) -> dict[str, Any]:
    """The benchmark's score of a sweep, from its ``(task id, attempt, record or None)`` episodes.

    ``score`` is the mean over attempts: the metric over every (task, attempt) episode in the file
    (accuracy, EX, success rate and EM average ``success``; F1 averages rewards; the HealthBench score
    is the clipped mean of the unclipped per-episode scores). ``per_attempt`` has the metric of each
    attempt alone; ``pass_at_k`` (``k > 1`` and a success metric) the unbiased pass@1 and pass@k over
    tasks. An episode that ended in an error counts as a failure (0); one not yet run is left out and
    ``complete`` is false. Scores are ``None`` where no episode ran.

    >>> card = DatasetCard(name="GSM8K", path="test.jsonl", metric="accuracy")
    >>> ds = SweepDataset("AgentRL/TIRMath-v0", card, ("a", "b"), (("test.jsonl", "0" * 64),))
    >>> score = sweep_score(ds, [("a", 0, {"success": True}), ("b", 0, {"success": False})], k=1)
    >>> score["score"], score["episodes"], score["complete"]
    (0.5, 2, True)
    """
    from agentrl.bench.stats import mean_pass_at_k

    score_from = dataset.card.score_from
    done = [(task_id, attempt, record) for task_id, attempt, record in episodes if record is not None]
    values = [_value(record, score_from) for _, _, record in done]
    per_attempt = [_aggregate([_value(r, score_from) for _, a, r in done if a == attempt], score_from)
                   for attempt in range(k)]
    result: dict[str, Any] = {
        "env_id": dataset.env_id,
        "dataset": dataset.as_json(),
        "metric": dataset.card.metric,
        "score_from": score_from,
        "score": _aggregate(values, score_from),
        "k": k,
        "per_attempt": per_attempt,
        "episodes": len(done),
        "expected_episodes": len(dataset.task_ids) * k,
        "tasks_run": len({task_id for task_id, _, _ in done}),
        "errors": sum(1 for _, _, record in done if record.get("error")),
        "complete": len(done) == len(dataset.task_ids) * k,
    }
    if k > 1 and score_from == "success":
        by_task: dict[str, list[bool]] = {}
        for task_id, _, record in done:
            by_task.setdefault(task_id, []).append(bool(record.get("success")))
        counts = [(len(v), sum(v)) for v in by_task.values()]
        passes = {str(kk): mean_pass_at_k(counts, kk) for kk in sorted({1, k})}
        result["pass_at_k"] = {kk: None if math.isnan(v) else v for kk, v in passes.items()}
    return result


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def format_sweep_lines(scores: Sequence[Mapping[str, Any]], agent: str) -> list[str]:
    """The printed summary of each sweep: the benchmark's score, how much of it ran, the file and its sha256."""
    lines = []
    for s in scores:
        data = s["dataset"]
        split = f" {data['split']}" if data.get("split") else ""
        state = "complete" if s["complete"] else f"INCOMPLETE: {s['episodes']} of {s['expected_episodes']} episodes"
        head = (f"{data['name']}{split} {s['metric']} ({s['env_id']}, {agent}): {_fmt(s['score'])} over "
                f"{data['tasks']} tasks x k={s['k']}, mean over attempts [{state}; {s['errors']} error(s)]")
        lines.append(head)
        if s["k"] > 1:
            attempts = ", ".join(_fmt(v) for v in s["per_attempt"])
            passk = ", ".join(f"pass@{kk}={_fmt(v)}" for kk, v in (s.get("pass_at_k") or {}).items())
            lines.append(f"  per attempt: {attempts}" + (f"; {passk}" if passk else ""))
        lines.append(f"  dataset: {data['path']} (sha256 {data['sha256']})")
    return lines


def write_score_file(out: str | os.PathLike[str], scores: Sequence[Mapping[str, Any]],
                     agent_config: Mapping[str, Any], command: Sequence[str] | None) -> Path:
    """Write ``<out>/score.json`` (atomically): the command, the agent and each env's sweep score."""
    path = Path(out) / SCORE_FILE
    payload = {"all_tasks": True, "command": list(command) if command is not None else None,
               "agent": dict(agent_config), "sweeps": [dict(s) for s in scores]}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path
