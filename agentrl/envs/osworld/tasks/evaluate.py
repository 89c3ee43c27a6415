"""Score a finished OSWorld episode the way OSWorld's ``DesktopEnv.evaluate()`` does, without a desktop.

The desktop supplies ``get(getter_spec)``: given a ``result``/``expected`` getter object from the task
JSON (``{"type": "vm_file", "path": ..., "dest": ...}``, ``{"type": "vm_command_line", ...}``...) it
returns what OSWorld's getter of that type returns (a local file path, a string, a directory tree),
``None`` when it could not fetch it, or raises :class:`FileNotFoundError`. ``"rule"`` getters never
reach ``get``: their ``rules`` are the expected value.

Semantics (OSWorld's): an infeasible task (``"func": "infeasible"``) scores 1 iff the last action is
``FAIL``; any other task scores 0 when the last action is ``FAIL``. Metrics run in order; with
``conj="and"`` (default) the first 0 ends evaluation with 0, otherwise the score is the mean; with
``conj="or"`` the first 1 ends evaluation with 1, otherwise the score is the max. Departures, so a
broken metric never crashes a rollout: a ``None`` result, a missing file, a getter error or a metric
exception each score that metric 0, with the reason in its details entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentrl.envs.osworld.evaluators import METRICS
from agentrl.envs.osworld.tasks.format import OSWorldTask

__all__ = ["FAIL", "evaluate", "is_fail"]

FAIL = "FAIL"
"""The special action an agent sends to declare the task infeasible."""


def is_fail(action: Any) -> bool:
    """Whether ``action`` is OSWorld's ``FAIL`` (the string, or a dict with ``action_type: FAIL``).

    >>> is_fail("FAIL"), is_fail({"action_type": "FAIL"}), is_fail("DONE"), is_fail(None)
    (True, True, False, False)
    """
    if isinstance(action, Mapping):
        return action.get("action_type") == FAIL
    return action == FAIL


def _fetch(spec: Mapping[str, Any], get: Callable[[dict[str, Any]], Any]) -> Any:
    if spec.get("type") == "rule":
        return spec["rules"]
    return get(dict(spec))


def evaluate(
    task: OSWorldTask,
    *,
    last_action: Any,
    get: Callable[[dict[str, Any]], Any],
) -> tuple[float, list[dict[str, Any]]]:
    """Return ``(score, details)``: the task's score in ``[0, 1]`` and one ``{func, score, error}`` per metric run.

    >>> task = OSWorldTask.from_dict({"id": "t", "instruction": "print hi",
    ...     "evaluator": {"func": "exact_match", "result": {"type": "vm_command_line", "command": "cat hi"},
    ...                   "expected": {"type": "rule", "rules": {"expected": "hi"}}}})
    >>> evaluate(task, last_action="DONE", get=lambda spec: "hi")
    (1.0, [{'func': 'exact_match', 'score': 1.0, 'error': None}])
    >>> evaluate(task, last_action="FAIL", get=lambda spec: "hi")
    (0.0, [{'func': 'exact_match', 'score': 0.0, 'error': 'last action is FAIL on a feasible task'}])
    """
    ev = task.evaluator
    if not ev.funcs:
        return 0.0, [{"func": "", "score": 0.0, "error": "the task has no evaluator (its func is empty)"}]
    if ev.infeasible:
        score = 1.0 if is_fail(last_action) else 0.0
        error = None if score else f"infeasible task: last action {last_action!r} is not FAIL"
        return score, [{"func": "infeasible", "score": score, "error": error}]
    if is_fail(last_action):
        return 0.0, [{"func": ev.funcs[0], "score": 0.0, "error": "last action is FAIL on a feasible task"}]

    details: list[dict[str, Any]] = []
    scores: list[float] = []
    for func, result_spec, expected_spec, options in zip(ev.funcs, ev.results, ev.expecteds, ev.options, strict=True):
        score, error = _run_metric(func, result_spec, expected_spec, options, get)
        details.append({"func": func, "score": score, "error": error})
        if ev.conj == "and" and score == 0.0:
            return 0.0, details
        if ev.conj == "or" and score == 1.0:
            return 1.0, details
        scores.append(score)
    final = sum(scores) / len(scores) if ev.conj == "and" else max(scores)
    return float(final), details


def _run_metric(
    func: str,
    result_spec: dict[str, Any] | None,
    expected_spec: dict[str, Any] | None,
    options: dict[str, Any],
    get: Callable[[dict[str, Any]], Any],
) -> tuple[float, str | None]:
    metric = METRICS.get(func)
    if metric is None:
        return 0.0, f"unsupported metric {func!r}"
    if result_spec is None:
        return 0.0, "no result getter"
    try:
        result = _fetch(result_spec, get)
    except FileNotFoundError as error:
        return 0.0, f"result file not found: {error}"
    except Exception as error:
        return 0.0, f"result getter {result_spec.get('type')!r} failed: {type(error).__name__}: {error}"
    if result is None:
        return 0.0, f"result getter {result_spec.get('type')!r} returned None"
    try:
        if expected_spec is not None:
            expected = _fetch(expected_spec, get)
            value = metric(result, expected, **options)
        else:
            value = metric(result, **options)
    except FileNotFoundError as error:
        return 0.0, f"file not found: {error}"
    except Exception as error:
        return 0.0, f"{func} raised {type(error).__name__}: {error}"
    try:
        score = float(value)
    except (TypeError, ValueError):
        return 0.0, f"{func} returned {value!r}, not a number"
    return min(max(score, 0.0), 1.0), None
