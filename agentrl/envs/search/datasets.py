r"""Loaders for the Search-R1 / FlashRAG file formats.

* A corpus is JSONL of ``{"id", "contents"}`` where ``contents`` is ``"\"Title\"\ntext"`` (the quoted
  title line is optional).
* A QA file is JSONL of ``{"question", "golden_answers": [...]}`` with an optional ``"id"``.

>>> import json, tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "qa.jsonl"
>>> _ = path.write_text(json.dumps({"question": "Who?", "golden_answers": ["Ada", "A. L."]}) + "\n")
>>> source = FlashRAGSource(path)
>>> len(source), source[0].id, source[0].answer, source[0].oracle_actions
(1, 'qa/0', 'Ada', ('<answer>Ada</answer>',))
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agentrl.core.errors import TaskFormatError
from agentrl.core.task import JsonlTaskSource, Task, read_jsonl
from agentrl.envs.search.corpus import Passage

__all__ = ["FlashRAGSource", "load_corpus_jsonl", "split_contents"]


def split_contents(contents: str) -> tuple[str, str]:
    r"""Split FlashRAG ``contents`` into ``(title, text)``; the title is ``""`` when there is no quoted first line.

    >>> split_contents('"Ada Lovelace"\nAda was a mathematician.')
    ('Ada Lovelace', 'Ada was a mathematician.')
    >>> split_contents("no title here")
    ('', 'no title here')
    """
    head, sep, rest = contents.partition("\n")
    title = head.strip()
    if sep and len(title) >= 2 and title[0] == '"' and title[-1] == '"':
        return title[1:-1].strip(), rest.strip()
    return "", contents.strip()


def load_corpus_jsonl(path: str | os.PathLike[str]) -> list[Passage]:
    """Read a FlashRAG corpus (``{"id", "contents"}`` per line) into passages.

    Raises:
        FileNotFoundError: no such file.
        TaskFormatError: a line that is not a JSON object with ``id`` and a string ``contents``
            (the message names file and line), or an empty file.
    """
    passages = []
    for number, row in read_jsonl(path):
        if "id" not in row or not isinstance(row.get("contents"), str):
            raise TaskFormatError(
                f"{path}:{number}: expected keys 'id' and 'contents' (a string '\"Title\"\\ntext'); "
                f"keys present: {sorted(row)}"
            )
        title, text = split_contents(row["contents"])
        passages.append(Passage(str(row["id"]), title, text))
    if not passages:
        raise TaskFormatError(f"{path}: no passages found (the file is empty)")
    return passages


class FlashRAGSource(JsonlTaskSource):
    """A finite task source over a FlashRAG / Search-R1 QA file (implements ``TaskSource``).

    Task ids are ``"<name>/<id>"`` (the row's ``id``, else its 0-based position); ``answer`` is the
    first golden answer and ``metadata["answers"]`` all of them.

    Args:
        qa_path: the JSONL file of ``{"question", "golden_answers"}`` rows.
        name: the id prefix and task family (default: the file's stem).

    Raises:
        FileNotFoundError: no such file.
        TaskFormatError: a malformed row (file and line named) or an empty file.
    """

    def __init__(self, qa_path: str | os.PathLike[str], name: str | None = None) -> None:
        self.path = Path(qa_path)
        self.name = name or self.path.stem
        self._count = 0
        super().__init__(self.path, self._row_to_task)

    def _row_to_task(self, row: dict[str, Any], number: int) -> Task:
        index, self._count = self._count, self._count + 1
        question, golds = row.get("question"), row.get("golden_answers")
        if isinstance(golds, str):
            golds = [golds]
        if not isinstance(question, str) or not question.strip() or not isinstance(golds, list) or not golds:
            raise ValueError("expected keys 'question' (a string) and 'golden_answers' (a non-empty list of strings)")
        answers = [str(g) for g in golds]
        return Task(
            id=f"{self.name}/{row.get('id', index)}",
            prompt=question.strip(),
            answer=answers[0],
            family=self.name,
            oracle_actions=(f"<answer>{answers[0]}</answer>",),
            metadata={"answers": answers, "dataset": self.name, "line": number},
        )
