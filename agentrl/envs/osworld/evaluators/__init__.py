"""OSWorld's evaluators: the getters that fetch a finished episode's state and the metrics that score it.

One module per app, in OSWorld's names (``evaluation_examples/examples/<domain>``): :mod:`.general` (files,
commands, JSON, text: every domain), :mod:`.calc`, :mod:`.writer`, :mod:`.impress`, :mod:`.chrome`, :mod:`.gimp`,
:mod:`.vlc`, :mod:`.thunderbird`, :mod:`.basic_os` (the os domain) and :mod:`.multi_apps`. Each declares two
dicts keyed by OSWorld's own names: ``GETTERS`` (``getter(client, spec)``, ``client`` a
:class:`~agentrl.envs.osworld.client.DesktopClient`) and ``METRICS`` (``metric(result, expected_or_rules,
**options) -> float``). They are merged here into :data:`GETTERS` and :data:`METRICS`; a name declared twice is a
bug caught at import, not a silent override. :func:`agentrl.envs.osworld.tasks.evaluate.evaluate` scores a task
with them.

>>> "compare_pdfs" in METRICS and "vlc_config" in GETTERS and "vm_file" in GETTERS
True
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from agentrl.core.choices import did_you_mean
from agentrl.envs.osworld.evaluators import (
    basic_os,
    calc,
    chrome,
    general,
    gimp,
    impress,
    multi_apps,
    thunderbird,
    vlc,
    writer,
)

__all__ = ["GETTERS", "METRICS", "get_result"]

_MODULES = (general, calc, writer, impress, chrome, gimp, vlc, thunderbird, basic_os, multi_apps)


def _merge(kind: str) -> dict[str, Callable[..., Any]]:
    merged: dict[str, Callable[..., Any]] = {}
    for module in _MODULES:
        table: Mapping[str, Callable[..., Any]] = getattr(module, kind)
        for name, function in table.items():
            if name in merged:
                raise RuntimeError(f"OSWorld {kind.lower()} {name!r} is declared twice (again in {module.__name__})")
            merged[name] = function
    return merged


GETTERS: dict[str, Callable[..., Any]] = _merge("GETTERS")
"""OSWorld getter type -> ``getter(client, spec)``, over every app module."""

METRICS: dict[str, Callable[..., float]] = _merge("METRICS")
"""OSWorld metric name -> ``metric(result, expected_or_rules, **options)``, over every app module."""


def _with_this_table(metric: Callable[..., float]) -> Callable[..., float]:
    """``metric`` with ``metrics=METRICS`` handed in; its name and docstring kept (``__wrapped__`` is it)."""

    @functools.wraps(metric)
    def bound(result: Any, expected: Any, **options: Any) -> float:
        return metric(result, expected, metrics=METRICS, **options)

    return bound


# compare_archive sends each member through another metric (text, docx, image...): it is handed this whole
# table here rather than importing it, so no app module imports this package.
METRICS["compare_archive"] = _with_this_table(multi_apps.METRICS["compare_archive"])


def get_result(client: Any, spec: Mapping[str, Any]) -> Any:
    """Run the getter ``spec["type"]`` names against ``client``; ``ValueError`` names an unknown type.

    ``rule`` and ``cloud_file`` getters never come here: ``rule`` is the task's own value and ``cloud_file`` is
    read from the offline asset store (:mod:`agentrl.envs.osworld.tasks.assets`) by the env.

    >>> get_result(None, {"type": "vm_filez"})
    Traceback (most recent call last):
    ...
    ValueError: getter type 'vm_filez' is not served by this desktop; did you mean 'vm_file'?
    """
    kind = spec.get("type")
    getter = GETTERS.get(str(kind))
    if getter is None:
        raise ValueError(f"getter type {kind!r} is not served by this desktop{did_you_mean(str(kind), list(GETTERS))}")
    return getter(client, spec)
