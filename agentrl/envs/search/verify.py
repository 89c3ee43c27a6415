"""Exact match and token F1 after SQuAD's answer normalisation (as Search-R1 and FlashRAG score)."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from agentrl.core.task import Task
from agentrl.core.verify import Score

__all__ = ["QAVerifier", "exact_match", "normalize_answer", "token_f1"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """Lower case, drop punctuation and articles, collapse whitespace (SQuAD's rule).

    >>> normalize_answer("  The Velmora   Group! ")
    'velmora group'
    """
    text = "".join(char for char in text.lower() if char not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    """1.0 when the normalised prediction equals any normalised gold answer.

    >>> exact_match("the Velmora group", ["Velmora Group"]), exact_match("Velmora", ["Velmora Group"])
    (1.0, 0.0)
    """
    predicted = normalize_answer(prediction)
    return float(any(predicted == normalize_answer(gold) for gold in golds))


def token_f1(prediction: str, golds: Sequence[str]) -> float:
    """The best token-level F1 between the prediction and any gold answer.

    >>> round(token_f1("Velmora", ["Velmora Group"]), 3)
    0.667
    """
    best = 0.0
    predicted = normalize_answer(prediction).split()
    for gold in golds:
        expected = normalize_answer(gold).split()
        common = sum((Counter(predicted) & Counter(expected)).values())
        if common == 0:
            continue
        precision, recall = common / len(predicted), common / len(expected)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best


class QAVerifier:
    """Reward = exact match (or token F1) against the task's gold answers.

    ``info["reward_components"]`` reports ``em``, ``f1`` and ``format`` (1.0: the answer came in
    ``<answer>`` tags, which the env guarantees for a final answer).

    >>> verifier = QAVerifier("em")
    >>> task = Task("q", "Who?", "Velmora Group", metadata={"answers": ["Velmora Group", "Velmora"]})
    >>> verifier(task, "velmora", {}).value
    1.0
    """

    def __init__(self, mode: Literal["em", "f1"] = "em") -> None:
        if mode not in ("em", "f1"):
            raise ValueError(f"reward mode must be 'em' or 'f1', got {mode!r}")
        self.mode = mode

    def __call__(self, task: Task, answer: str, state: Mapping[str, Any]) -> Score:
        """Score one answer; never raises on its content."""
        golds = [str(gold) for gold in task.metadata.get("answers", [])] or [task.answer]
        em, f1 = exact_match(answer, golds), token_f1(answer, golds)
        return Score(em if self.mode == "em" else f1, {"em": em, "f1": f1, "format": 1.0})
