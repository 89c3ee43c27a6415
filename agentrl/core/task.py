"""Tasks and where they come from.

A :class:`Task` is one problem instance: what the agent is asked, the gold answer the verifier
compares against, and an *oracle* action sequence that provably solves it (used by tests and by
the oracle agent to show every task is solvable). A :class:`TaskSource` hands tasks to an env:
procedural sources draw them from the env's seeded ``np_random``; file sources read JSONL.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from agentrl.core.errors import TaskFormatError, UnknownTask

__all__ = ["JsonlTaskSource", "ListTaskSource", "Task", "TaskSource", "read_jsonl"]


@dataclass(frozen=True)
class Task:
    r"""One problem instance.

    Attributes:
        id: stable identifier; for procedural tasks it encodes everything needed to regenerate it,
            so ``source.get(task.id) == task``.
        prompt: the problem statement shown to the agent.
        answer: the gold answer (a canonical string; LaTeX allowed).
        family: the task family, e.g. ``"modular"``.
        difficulty: an integer knob (0 when unknown).
        oracle_actions: a privileged action sequence that solves the task.
        metadata: anything else a verifier or a report may need (JSON-serialisable).

    >>> t = Task(id="demo/0", prompt="What is 6*7?", answer="42", oracle_actions=("\\\\boxed{42}",))
    >>> t.answer, len(t.oracle_actions)
    ('42', 1)
    """

    id: str
    prompt: str
    answer: str
    family: str = ""
    difficulty: int = 0
    oracle_actions: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class TaskSource(Protocol):
    """Where an env gets its tasks.

    ``sample(rng)`` must draw only from ``rng`` (the env's ``np_random``) so that
    ``env.reset(seed=s)`` is reproducible; ``get(task_id)`` returns one task by id or raises
    :class:`~agentrl.core.errors.UnknownTask`. Finite sources may also define ``__len__`` and
    ``__getitem__`` so that ``reset(options={"task_index": i})`` can sweep them.
    """

    def sample(self, rng: np.random.Generator) -> Task:
        """Draw one task using only ``rng``."""
        ...

    def get(self, task_id: str) -> Task:
        """Return the task with this id, or raise ``UnknownTask``."""
        ...


class ListTaskSource:
    """A finite, ordered task source over a list of tasks.

    >>> src = ListTaskSource([Task("a", "1+1?", "2"), Task("b", "2+2?", "4")])
    >>> len(src), src[1].id, src.get("a").answer
    (2, 'b', '2')
    >>> src.sample(np.random.default_rng(0)).id in {"a", "b"}
    True
    """

    def __init__(self, tasks: Sequence[Task]) -> None:
        if not tasks:
            raise ValueError("a ListTaskSource needs at least one task")
        self._tasks = list(tasks)
        self._by_id: dict[str, Task] = {}
        for task in self._tasks:
            if task.id in self._by_id:
                raise ValueError(f"duplicate task id {task.id!r}; task ids must be unique")
            self._by_id[task.id] = task

    def __len__(self) -> int:
        return len(self._tasks)

    def __getitem__(self, index: int) -> Task:
        if not isinstance(index, (int, np.integer)) or not -len(self) <= index < len(self):
            raise UnknownTask(index, hint=f"task_index must be an int in [0, {len(self)})")
        return self._tasks[int(index)]

    def __iter__(self) -> Iterator[Task]:
        return iter(self._tasks)

    def sample(self, rng: np.random.Generator) -> Task:
        """Draw one task uniformly with ``rng``."""
        return self._tasks[int(rng.integers(len(self._tasks)))]

    def get(self, task_id: str) -> Task:
        """Return a task by id."""
        try:
            return self._by_id[task_id]
        except KeyError:
            raise UnknownTask(task_id, known=list(self._by_id)) from None


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, row)`` for each non-blank line of a JSONL file.

    Raises:
        FileNotFoundError: the file does not exist (the message has the absolute path).
        TaskFormatError: a line is not a JSON object; the message names the file and line.
    """
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"task file not found: {file.resolve()}")
    with file.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TaskFormatError(f"{file}:{number}: not valid JSON ({exc.msg} at column {exc.colno})") from None
            if not isinstance(row, dict):
                raise TaskFormatError(f"{file}:{number}: expected a JSON object per line, got {type(row).__name__}")
            yield number, row


class JsonlTaskSource(ListTaskSource):
    """A finite task source read from a JSONL file, one task per line.

    ``row_to_task(row, line_number)`` turns one JSON object into a :class:`Task`; it raises
    ``KeyError``/``ValueError`` for a malformed row, which becomes a :class:`TaskFormatError`
    naming the file and line.
    """

    def __init__(self, path: str | os.PathLike[str], row_to_task: Callable[[dict[str, Any], int], Task]) -> None:
        tasks = []
        for number, row in read_jsonl(path):
            try:
                tasks.append(row_to_task(row, number))
            except (KeyError, ValueError, TypeError) as exc:
                if isinstance(exc, TaskFormatError):
                    raise
                raise TaskFormatError(f"{path}:{number}: {exc}; keys present: {sorted(row)}") from None
        if not tasks:
            raise TaskFormatError(f"{path}: no tasks found (the file is empty)")
        super().__init__(tasks)
