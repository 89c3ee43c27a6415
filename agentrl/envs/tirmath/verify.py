"""Math answer equivalence (math-verify), safe to call from any thread.

:func:`answers_equal` is the pure comparison. :class:`MathVerifier` is the env's verifier: it first
tries an exact rational comparison (instant, covers integers and fractions), then math-verify in a
helper process. math-verify's own timeout uses ``signal.alarm``, which only works in a main thread,
and sympy can hang on adversarial input such as ``10^{10^{10}}``; a process with a deadline
that is killed and replaced on expiry bounds both. That process is
``python -m agentrl.envs.tirmath.grader`` (:mod:`agentrl.envs.tirmath.grader`), which never imports
the caller's main module, so scoring works from standard input, ``python -c``, unguarded scripts
and embedded interpreters.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from agentrl.core.errors import DependencyNotInstalled
from agentrl.core.task import Task
from agentrl.core.verify import Score
from agentrl.envs.tirmath.grader import GraderProcess

__all__ = ["MathVerifier", "answers_equal", "exact_rational"]

_FRAC = re.compile(r"^(-?)\\[dt]?frac\{(-?\d+)\}\{(-?\d+)\}$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$|^-?\d+/-?\d+$")


def _normalise(text: str) -> str:
    text = text.strip().strip("$").strip()
    text = re.sub(r"\\(left|right|!|,|;| )", "", text)
    text = re.sub(r"\\text\{\s*\}", "", text)
    text = text.replace(" ", "").rstrip(".")
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", text):
        text = text.replace(",", "")
    return text


def exact_rational(text: str) -> Fraction | None:
    r"""Parse integers, decimals, ``a/b`` and ``\frac{a}{b}`` exactly; ``None`` for anything else.

    >>> exact_rational(r"-\frac{3}{6}"), exact_rational("1,000"), exact_rational("x+1")
    (Fraction(-1, 2), Fraction(1000, 1), None)
    """
    text = _normalise(text)
    if len(text) > 400:
        return None
    match = _FRAC.match(text)
    try:
        if match:
            value = Fraction(int(match.group(2)), int(match.group(3)))
            return -value if match.group(1) else value
        if _NUMBER.match(text):
            return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None
    return None


def answers_equal(prediction: str, gold: str, *, timeout_s: int | None = None) -> bool:
    r"""Whether ``prediction`` equals ``gold`` mathematically (math-verify, after an exact fast path).

    ``timeout_s`` is passed to math-verify, whose timer needs the main thread; ``None`` disables it.

    >>> answers_equal(r"\frac{6}{4}", "3/2"), answers_equal("x^2+2x+1", "(x+1)^2"), answers_equal("7", "8")
    (True, True, False)
    """
    if _normalise(prediction) == _normalise(gold):
        return True
    left, right = exact_rational(prediction), exact_rational(gold)
    if left is not None and right is not None:
        return left == right
    try:
        from math_verify import parse, verify
    except ImportError:  # pragma: no cover - depends on the install
        raise DependencyNotInstalled("math-verify", extra="math") from None
    gold_parsed = parse(f"${gold}$", parsing_timeout=timeout_s)
    pred_parsed = parse(f"${prediction}$", parsing_timeout=timeout_s)
    if not gold_parsed or not pred_parsed:
        return False
    return bool(verify(gold_parsed, pred_parsed, timeout_seconds=timeout_s))


class _DisabledTimeoutFilter(logging.Filter):
    """Drops math-verify's warning that its timeout is off: the caller bounds the time instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Timeout is disabled" not in record.getMessage()


for _name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_name).addFilter(_DisabledTimeoutFilter())


_CHECKER = GraderProcess()  # one grader process shared by every verifier in this process


class MathVerifier:
    r"""Reward 1 when the final answer equals the task's gold answer, else 0.

    Args:
        timeout_s: deadline for one symbolic comparison; past it the answer scores 0.
        max_answer_chars: longer answers score 0 without being parsed.

    >>> verifier = MathVerifier()
    >>> task = Task("t", "6*7?", "42")
    >>> verifier(task, "42", {}).value, verifier(task, "41", {}).value
    (1.0, 0.0)
    """

    def __init__(self, timeout_s: float = 10.0, max_answer_chars: int = 1000) -> None:
        self.timeout_s = timeout_s
        self.max_answer_chars = max_answer_chars

    def __call__(self, task: Task, answer: str, state: Mapping[str, Any]) -> Score:
        """Score one final answer; never raises on the answer's content."""
        answer = answer.encode("utf-8", "replace").decode("utf-8")
        if len(answer) > self.max_answer_chars:
            return Score(0.0, {"correct": 0.0}, f"answer longer than {self.max_answer_chars} characters")
        left, right = exact_rational(answer), exact_rational(task.answer)
        if left is not None and right is not None:
            correct, detail = left == right, "exact rational comparison"
        elif _normalise(answer) == _normalise(task.answer):
            correct, detail = True, "identical after normalisation"
        else:
            verdict, error = _CHECKER.compare(answer, task.answer, self.timeout_s)
            correct, detail = bool(verdict), error or "math-verify"
        value = 1.0 if correct else 0.0
        return Score(value, {"correct": value}, detail)
