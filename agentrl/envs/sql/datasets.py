"""Load Spider- or BIRD-format text-to-SQL benchmarks from their official directory layouts.

Spider::

    root/tables.json
    root/<split>.json                       # [{"db_id", "question", "query", ...}, ...]
    root/database/<db_id>/<db_id>.sqlite

BIRD::

    root/<split>.json                       # [{"db_id", "question", "SQL", "evidence", ...}, ...]
    root/<split>_databases/<db_id>/<db_id>.sqlite   (or root/database/<db_id>/<db_id>.sqlite)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agentrl.core.errors import TaskFormatError, UnknownTask
from agentrl.core.task import ListTaskSource, Task

__all__ = ["SpiderSource"]

_LAYOUTS = {
    "spider": "root/tables.json, root/<split>.json and root/database/<db_id>/<db_id>.sqlite",
    "bird": "root/<split>.json and root/<split>_databases/<db_id>/<db_id>.sqlite (or root/database/...)",
}


class SpiderSource:
    """A finite task source over a Spider or BIRD split (implements ``TaskSource``).

    Args:
        root: the dataset folder (see the module docstring for the layouts).
        split: the split file name without ``.json``, e.g. ``"dev"``.
        format: ``"spider"`` or ``"bird"``; BIRD's ``evidence`` is appended to the prompt as ``Hint: ...``.

    Raises:
        FileNotFoundError: a missing file or database; the message names the path and the layout.
        TaskFormatError: a malformed row; the message names the file and the row index.
        ValueError: an unknown format.

    Task ids are ``"<format>/<split>/<index>"``.

    >>> import json, sqlite3, tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "database" / "pets").mkdir(parents=True)
    >>> with sqlite3.connect(root / "database" / "pets" / "pets.sqlite") as db:
    ...     _ = db.execute("CREATE TABLE pet (name TEXT, age INT)")
    >>> _ = (root / "tables.json").write_text("[]")
    >>> row = {"db_id": "pets", "question": "How many pets?", "query": "SELECT count(*) FROM pet"}
    >>> _ = (root / "dev.json").write_text(json.dumps([row]))
    >>> src = SpiderSource(root)
    >>> len(src), src[0].metadata["mode"], src.get(src[0].id) == src[0]
    (1, 'spider', True)
    """

    def __init__(
        self, root: str | os.PathLike[str], split: str = "dev", format: Literal["spider", "bird"] = "spider"
    ) -> None:
        if format not in _LAYOUTS:
            raise ValueError(f"format must be 'spider' or 'bird', got {format!r}")
        self.root, self.split, self.format = Path(root), split, format
        layout = f"expected layout: {_LAYOUTS[format]}"
        if not self.root.is_dir():
            raise FileNotFoundError(f"dataset folder not found: {self.root.resolve()}; {layout}")
        if format == "spider":
            tables = self.root / "tables.json"
            if not tables.is_file():
                raise FileNotFoundError(f"missing {tables.resolve()}; {layout}")
        split_file = self.root / f"{split}.json"
        if not split_file.is_file():
            raise FileNotFoundError(f"missing {split_file.resolve()}; {layout}")
        try:
            rows = json.loads(split_file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise TaskFormatError(f"{split_file}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(rows, list) or not rows:
            raise TaskFormatError(f"{split_file}: expected a non-empty JSON list of questions")
        sql_key = "query" if format == "spider" else "SQL"
        tasks = [self._row_to_task(row, index, split_file, sql_key, layout) for index, row in enumerate(rows)]
        self._source = ListTaskSource(tasks)

    def _db_path(self, db_id: str, layout: str) -> Path:
        candidates = [self.root / "database" / db_id / f"{db_id}.sqlite"]
        if self.format == "bird":
            candidates.insert(0, self.root / f"{self.split}_databases" / db_id / f"{db_id}.sqlite")
        for path in candidates:
            if path.is_file():
                return path
        raise FileNotFoundError(f"database {db_id!r} not found at {candidates[0].resolve()}; {layout}")

    def _row_to_task(self, row: Any, index: int, file: Path, sql_key: str, layout: str) -> Task:
        if not isinstance(row, dict):
            raise TaskFormatError(f"{file}[{index}]: expected a JSON object, got {type(row).__name__}")
        missing = [k for k in ("db_id", "question", sql_key) if not isinstance(row.get(k), str) or not row[k].strip()]
        if missing:
            raise TaskFormatError(
                f"{file}[{index}]: missing or empty {', '.join(missing)}; keys present: {sorted(row)}"
            )
        db_id, gold = row["db_id"], row[sql_key].strip()
        prompt = row["question"].strip()
        evidence = row.get("evidence")
        if self.format == "bird" and isinstance(evidence, str) and evidence.strip():
            prompt += f"\nHint: {evidence.strip()}"
        difficulty = row.get("difficulty")
        level = {"simple": 1, "moderate": 2, "challenging": 3}.get(difficulty, 0) if isinstance(difficulty, str) else 0
        metadata: dict[str, Any] = {
            "db_path": str(self._db_path(db_id, layout)),
            "db_id": db_id,
            "gold_sql": gold,
            "order_matters": "order by" in gold.lower(),
            "mode": self.format,
            "schema": db_id,
        }
        if "question_id" in row:
            metadata["question_id"] = row["question_id"]
        return Task(
            id=f"{self.format}/{self.split}/{index}",
            prompt=prompt,
            answer=gold,
            family=db_id,
            difficulty=level,
            oracle_actions=(f"<solution>{gold}</solution>",),
            metadata=metadata,
        )

    @property
    def split_file(self) -> Path:
        """The split's question file, ``root/<split>.json``."""
        return self.root / f"{self.split}.json"

    def data_files(self) -> list[Path]:
        """Every file that decides this split's tasks and gold results, in a stable order.

        The split file, ``tables.json`` (Spider), and for each database the split uses (in order of first
        use) every ``.sqlite`` in its folder (Spider's test-suite evaluator scores on all of them).

        >>> import json, sqlite3, tempfile, pathlib
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> (root / "database" / "pets").mkdir(parents=True)
        >>> sqlite3.connect(root / "database" / "pets" / "pets.sqlite").close()
        >>> _ = (root / "tables.json").write_text("[]")
        >>> _ = (root / "dev.json").write_text(json.dumps([{"db_id": "pets", "question": "?", "query": "SELECT 1"}]))
        >>> [p.relative_to(root).as_posix() for p in SpiderSource(root).data_files()]
        ['dev.json', 'tables.json', 'database/pets/pets.sqlite']
        """
        files = [self.split_file]
        if self.format == "spider":
            files.append(self.root / "tables.json")
        folders = dict.fromkeys(Path(task.metadata["db_path"]).parent for task in self._source)
        for folder in folders:
            files += sorted(folder.glob("*.sqlite"))
        return list(dict.fromkeys(files))

    def __repr__(self) -> str:
        return f"SpiderSource(root={str(self.root)!r}, split={self.split!r}, format={self.format!r}, n={len(self)})"

    def __len__(self) -> int:
        return len(self._source)

    def __getitem__(self, index: int) -> Task:
        return self._source[index]

    def __iter__(self) -> Iterator[Task]:
        return iter(self._source)

    def sample(self, rng: np.random.Generator) -> Task:
        """Draw one task uniformly with ``rng``."""
        return self._source.sample(rng)

    def get(self, task_id: str) -> Task:
        """Return a task by id (``"<format>/<split>/<index>"``).

        Raises:
            UnknownTask: no such id.
        """
        try:
            return self._source.get(task_id)
        except UnknownTask:
            raise UnknownTask(
                task_id, hint=f"ids look like '{self.format}/{self.split}/<index>', 0 <= index < {len(self)}"
            ) from None
