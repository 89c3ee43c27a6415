r"""Enumerable task datasets: the convention a full-dataset sweep (``agentrl bench --all-tasks``) relies on.

A standard score (Spider dev, GSM8K test, an OSWorld task list) needs every task of a dataset exactly
once, in the dataset's order. An env whose tasks come from such a dataset implements
:class:`TaskDataset`:

* ``task_ids()``: every task id, in dataset order; ``env.reset(options={"task_id": id})`` starts that task.
* ``dataset_card()``: a :class:`DatasetCard` naming the file the tasks were read from, the files whose
  content decides the tasks and their gold answers, and the benchmark's own metric. An env configured
  without a dataset (a procedural generator) raises :class:`NoTaskDataset` saying which option to pass.

Nothing here imports an env: the bench layer checks ``isinstance(env.unwrapped, TaskDataset)``.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "test.jsonl"
>>> _ = path.write_text('{"question": "1+1?", "answer": "#### 2"}\n')
>>> card = DatasetCard(name="GSM8K", path=str(path), metric="accuracy")
>>> card.files == (str(path),), len(sha256_file(card.path))
(True, 64)
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from agentrl.core.errors import AgentRLError

__all__ = [
    "SCORE_SOURCES",
    "DatasetCard",
    "NoTaskDataset",
    "ScoreFrom",
    "TaskDataset",
    "combine_sha256",
    "files_sha256",
    "finite_task_ids",
    "sha256_file",
]

#: where a sweep's score comes from: the episodes' ``success`` flags (accuracy, EX, success rate, EM),
#: their rewards (a mean such as token F1), or HealthBench's unclipped per-example score
ScoreFrom = Literal["success", "reward", "healthbench_score"]
SCORE_SOURCES: tuple[str, ...] = ("success", "reward", "healthbench_score")


class NoTaskDataset(AgentRLError, ValueError):
    """The env, as configured, has no finite dataset to sweep; the message names the option that gives it one."""


def sha256_file(path: str | os.PathLike[str]) -> str:
    """The hex sha256 of a file's bytes (read in 1 MiB chunks).

    Raises:
        FileNotFoundError: no such file (the message has the absolute path).
    """
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"dataset file not found: {file.resolve()}")
    digest = hashlib.sha256()
    with file.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def files_sha256(paths: Iterable[str | os.PathLike[str]]) -> str:
    """One sha256 over several files: each file's name and sha256, in the order given.

    >>> files_sha256([]) == hashlib.sha256(b"").hexdigest()
    True
    """
    return combine_sha256((path, sha256_file(path)) for path in paths)


def combine_sha256(hashes: Iterable[tuple[str | os.PathLike[str], str]]) -> str:
    """One sha256 over ``(path, sha256)`` pairs already computed: each file's name and hash, in order.

    >>> combine_sha256([("/a/dev.json", "00")]) == combine_sha256([("/b/dev.json", "00")])
    True
    """
    digest = hashlib.sha256()
    for path, sha in hashes:
        digest.update(f"{Path(path).name}\0{sha}\n".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class DatasetCard:
    """What a sweep reports about the dataset it ran: where it is, its content hash, how it is scored.

    Attributes:
        name: the benchmark's name (``"GSM8K"``, ``"MATH"``, ``"Spider"``, ``"BIRD"``, ``"OSWorld"``...).
        path: the file the tasks were read from (absolute); for a folder dataset, its task file
            (Spider's ``dev.json``, OSWorld's ``test_all.json``) or the folder itself.
        metric: the benchmark's own score, as it names it (``"accuracy"``, ``"EX"``...).
        score_from: what the score averages (see :data:`ScoreFrom`).
        split: the named split, where the dataset has them.
        files: every file whose content decides the tasks and their gold answers, ``path`` first;
            default ``(path,)``.
    """

    name: str
    path: str
    metric: str
    score_from: ScoreFrom = "success"
    split: str | None = None
    files: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.score_from not in SCORE_SOURCES:
            raise ValueError(f"score_from must be one of {SCORE_SOURCES}, got {self.score_from!r}")
        if not self.files:
            object.__setattr__(self, "files", (self.path,))


@runtime_checkable
class TaskDataset(Protocol):
    """An env whose tasks form a finite, ordered dataset (see the module docstring)."""

    def task_ids(self) -> list[str]:
        """Every task id, in dataset order; each one starts with ``reset(options={"task_id": id})``."""
        ...

    def dataset_card(self) -> DatasetCard:
        """The dataset's card; raises :class:`NoTaskDataset` when the env has no dataset to sweep."""
        ...


def finite_task_ids(source: Any, *, hint: str) -> list[str]:
    """Every task id of a finite task source (one that iterates its tasks), in its order.

    Args:
        source: a task source with ``__iter__`` (``ListTaskSource``, ``JsonlTaskSource``...).
        hint: what to pass to give the env a finite dataset (for the error).

    Raises:
        NoTaskDataset: the source cannot be enumerated (a procedural generator).

    >>> from agentrl.core.task import ListTaskSource, Task
    >>> finite_task_ids(ListTaskSource([Task("a", "?", "1"), Task("b", "?", "2")]), hint="")
    ['a', 'b']
    """
    if not isinstance(source, Sequence) and not (hasattr(source, "__iter__") and hasattr(source, "__len__")):
        raise NoTaskDataset(f"{type(source).__name__} draws tasks without end; {hint}")
    return [str(task.id) for task in source]
