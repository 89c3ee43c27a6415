r"""Math word-problem datasets from JSONL files: GSM8K-style, MATH-style and a simple format.

Three row formats are understood (``format="auto"`` picks one per file from the first row):

- ``"gsm8k"``: ``{"question": ..., "answer": "...reasoning... #### 72"}``; the gold answer is the
  text after the last ``####``, with thousands separators removed (``"1,000"`` -> ``"1000"``).
- ``"math"`` (Hendrycks MATH, MATH-500): ``{"problem": ..., "solution": "... \boxed{...}",
  "level": "Level 3", "type": "Algebra"}``. An explicit ``"answer"`` field (MATH-500 has one) is
  preferred; otherwise the gold is the last ``\boxed{...}`` / ``\fbox{...}`` of the solution,
  braces balanced. The difficulty comes from ``level`` (``"Level N"`` or an int; 0 if unknown).
- ``"simple"``: ``{"prompt" | "question" | "problem": ..., "answer": ...}``.

Any row may carry an ``"id"``; otherwise the task id is ``"<name>/<row index>"`` where the row index
counts non-blank lines from 0 (so ``source[i].id == f"{name}/{i}"`` for files without ids) and
``name`` defaults to the file's stem. These tasks have no code oracle: ``oracle_actions`` is just
the final answer action.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from agentrl.core.errors import TaskFormatError
from agentrl.core.task import ListTaskSource, Task, read_jsonl

__all__ = ["FORMATS", "JsonlMathSource", "extract_boxed", "gsm8k_answer"]

Format = Literal["auto", "gsm8k", "math", "simple"]
FORMATS: tuple[str, ...] = ("auto", "gsm8k", "math", "simple")

_EXPECTED = {
    "gsm8k": 'gsm8k rows need "question" and "answer" (ending in "#### <number>")',
    "math": 'math rows need "problem" and either "answer" or a "solution" containing \\boxed{...}',
    "simple": 'simple rows need one of "prompt"/"question"/"problem" and "answer"',
}
_ALL_EXPECTED = "; ".join(_EXPECTED.values())
_PROMPT_KEYS = ("prompt", "question", "problem")
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_BOXED_BARE = re.compile(r"\\boxed +([^\s$]+)")  # "\boxed 5", seen in a few MATH solutions
_LEVEL = re.compile(r"(\d+)")
_FINAL_ACTION = "The answer is \\boxed{{{}}}."


def extract_boxed(text: str) -> str | None:
    r"""Return the content of the last ``\boxed{...}`` or ``\fbox{...}`` in ``text`` (or ``None``).

    Nested braces are balanced, so LaTeX such as ``\frac{1}{2}`` stays whole.

    >>> extract_boxed(r"so $x = \boxed{\frac{1}{2}}$, not \boxed{3}? No: \fbox{\sqrt{2}}.")
    '\\sqrt{2}'
    >>> extract_boxed("no box here") is None
    True
    """
    for match in reversed(list(_BOXED.finditer(text))):
        depth, start = 1, match.end()
        for i in range(start, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    content = text[start:i].strip()
                    if len(content) > 1 and content[0] == content[-1] == "$":  # \fbox{$...$}
                        content = content[1:-1].strip()
                    return content
        # unbalanced: try an earlier box
    bare = _BOXED_BARE.findall(text)
    return bare[-1].strip() if bare else None


def gsm8k_answer(answer_field: str) -> str | None:
    """Return the gold answer of a GSM8K ``answer`` field: the text after the last ``####``.

    >>> gsm8k_answer("7 boxes of 1,000 pens is 7 * 1000 = <<7*1000=7000>>7000 pens. #### 7,000")
    '7000'
    >>> gsm8k_answer("no marker") is None
    True
    """
    if "####" not in answer_field:
        return None
    gold = answer_field.rsplit("####", 1)[1].strip().replace(",", "")
    if gold.endswith(".") and gold[:-1].replace("-", "", 1).isdigit():
        gold = gold[:-1]
    return gold or None


def _detect(row: dict[str, Any]) -> str | None:
    """Guess a row's format from its keys (``None`` if it fits none)."""
    if "problem" in row and ("solution" in row or "level" in row or "type" in row or "subject" in row):
        return "math"
    if "question" in row and isinstance(row.get("answer"), str) and "####" in row["answer"]:
        return "gsm8k"
    if "answer" in row and any(key in row for key in _PROMPT_KEYS):
        return "simple"
    return None


def _text(row: dict[str, Any], key: str, where: str, fmt: str) -> str:
    """Fetch a non-empty string field, or raise a TaskFormatError naming the place and the format."""
    if key not in row:
        raise TaskFormatError(f"{where}: missing key {key!r}; {_EXPECTED[fmt]}; keys present: {sorted(row)}")
    value = row[key]
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise TaskFormatError(f"{where}: {key!r} must be a string, got {type(value).__name__}; {_EXPECTED[fmt]}")
    value = str(value).strip()
    if not value:
        raise TaskFormatError(f"{where}: {key!r} is empty; {_EXPECTED[fmt]}")
    return value


def _difficulty(level: object) -> int:
    """``"Level 3"`` -> 3, ``3`` -> 3, anything else (``"Level ?"``, missing) -> 0."""
    if isinstance(level, int) and not isinstance(level, bool):
        return level
    match = _LEVEL.search(level) if isinstance(level, str) else None
    return int(match.group(1)) if match else 0


class JsonlMathSource(ListTaskSource):
    r"""A finite task source of math problems read from a JSONL file (implements ``TaskSource``).

    Supports ``len(source)``, ``source[i]``, iteration, ``source.get(task_id)`` and
    ``source.sample(rng)`` (uniform, with ``rng.integers``).

    Args:
        path: the JSONL file, one JSON object per line; blank lines are skipped.
        format: ``"gsm8k"``, ``"math"``, ``"simple"``, or ``"auto"`` to detect it from the first row.
        name: the prefix of generated task ids (default: the file's stem, e.g. ``"test"`` for
            ``test.jsonl``).

    Raises:
        FileNotFoundError: the file does not exist (the message has the path).
        TaskFormatError: a line that is not a JSON object, a row without the expected keys (the
            message names the file, the line and the keys expected), a duplicate id or an empty file.
        ValueError: an unknown ``format``.

    """

    def __init__(self, path: str | os.PathLike[str], format: Format = "auto", name: str | None = None) -> None:
        """Read and validate the whole file (see the class docstring)."""
        if format not in FORMATS:
            raise ValueError(f"unknown format {format!r}; choose from: {', '.join(FORMATS)}")
        self.path = Path(path)
        self.name = name if name is not None else self.path.stem
        self.format: str = format
        tasks: list[Task] = []
        first_line: dict[str, int] = {}
        rows = read_jsonl(self.path)
        while True:
            try:
                line, row = next(rows)
            except StopIteration:
                break
            except TaskFormatError as exc:
                raise TaskFormatError(f"{exc}; expected one JSON object per line: {self._expected()}") from None
            where = f"{self.path}:{line}"
            if self.format == "auto":
                detected = _detect(row)
                if detected is None:
                    raise TaskFormatError(
                        f"{where}: cannot tell the row format from its keys {sorted(row)}; expected one of: "
                        f"{_ALL_EXPECTED}"
                    )
                self.format = detected
            task = self._row_to_task(row, len(tasks), line, where)
            if task.id in first_line:
                raise TaskFormatError(
                    f"{where}: duplicate task id {task.id!r} (first on line {first_line[task.id]}); ids must be unique"
                )
            first_line[task.id] = line
            tasks.append(task)
        if not tasks:
            raise TaskFormatError(f"{self.path}: the file has no rows; expected JSONL rows: {self._expected()}")
        super().__init__(tasks)

    def __repr__(self) -> str:
        """Show the file, format, name and size."""
        return f"JsonlMathSource({str(self.path)!r}, format={self.format!r}, name={self.name!r}, tasks={len(self)})"

    def _expected(self) -> str:
        return _ALL_EXPECTED if self.format == "auto" else _EXPECTED[self.format]

    def _row_to_task(self, row: dict[str, Any], index: int, line: int, where: str) -> Task:
        fmt = self.format
        metadata: dict[str, Any] = {"source": self.name, "format": fmt, "line": line}
        if fmt == "gsm8k":
            prompt = _text(row, "question", where, fmt)
            gold = gsm8k_answer(_text(row, "answer", where, fmt))
            if gold is None:
                raise TaskFormatError(f"{where}: the 'answer' field has no '#### <answer>' marker; {_EXPECTED[fmt]}")
            family, difficulty = "gsm8k", 0
        elif fmt == "math":
            prompt = _text(row, "problem", where, fmt)
            if row.get("answer") not in (None, ""):
                gold = _text(row, "answer", where, fmt)
            else:
                if "solution" not in row:
                    raise TaskFormatError(
                        f"{where}: neither 'answer' nor 'solution' present; {_EXPECTED[fmt]}; keys present: "
                        f"{sorted(row)}"
                    )
                boxed = extract_boxed(_text(row, "solution", where, fmt))
                if not boxed:
                    raise TaskFormatError(f"{where}: no \\boxed{{...}} answer in 'solution'; {_EXPECTED[fmt]}")
                gold = boxed
            family = str(row.get("type") or row.get("subject") or "")
            difficulty = _difficulty(row.get("level"))
            for key in ("level", "type", "subject", "unique_id"):
                if key in row:
                    metadata[key] = row[key]
        else:
            key = next((k for k in _PROMPT_KEYS if k in row), "prompt")
            prompt = _text(row, key, where, fmt)
            gold = _text(row, "answer", where, fmt)
            family = str(row.get("family", ""))
            difficulty = _difficulty(row.get("difficulty"))
        task_id = str(row["id"]) if row.get("id") not in (None, "") else f"{self.name}/{index}"
        return Task(
            id=task_id,
            prompt=prompt,
            answer=gold,
            family=family,
            difficulty=difficulty,
            oracle_actions=(_FINAL_ACTION.format(gold),),
            metadata=metadata,
        )
