"""One place that gathers the app modules' OSWorld getters, metrics and setup steps.

Each app module (:mod:`~agentrl.envs.osworld.chrome_profile`, :mod:`~agentrl.envs.osworld.gimp`,
:mod:`~agentrl.envs.osworld.vlc`, :mod:`~agentrl.envs.osworld.thunderbird`,
:mod:`~agentrl.envs.osworld.metrics_files`, :mod:`~agentrl.envs.osworld.office_extra`) declares three dicts,
``GETTERS``, ``METRICS`` and ``SETUP_STEPS``, keyed by OSWorld's own names. They are merged here, and a name
declared twice is a bug caught at import, not a silent override.

>>> "compare_pdfs" in APP_METRICS and "vlc_config" in APP_GETTERS
True
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentrl.envs.osworld import chrome_profile, gimp, metrics_files, office_extra, thunderbird, vlc

__all__ = ["APP_GETTERS", "APP_METRICS", "APP_SETUP_STEPS"]

_MODULES = (chrome_profile, gimp, vlc, thunderbird, metrics_files, office_extra)


def _merge(kind: str) -> dict[str, Callable[..., Any]]:
    merged: dict[str, Callable[..., Any]] = {}
    for module in _MODULES:
        table: Mapping[str, Callable[..., Any]] = getattr(module, kind)
        for name, func in table.items():
            if name in merged:
                raise RuntimeError(f"OSWorld {kind[:-1].lower()} {name!r} is declared twice ({module.__name__})")
            merged[name] = func
    return merged


APP_GETTERS: dict[str, Callable[..., Any]] = _merge("GETTERS")
"""Getter type -> ``getter(client, spec)``."""

APP_METRICS: dict[str, Callable[..., float]] = _merge("METRICS")
"""Metric name -> ``metric(result, expected, **options)``."""

APP_SETUP_STEPS: dict[str, Callable[..., None]] = _merge("SETUP_STEPS")
"""Setup step type -> ``step(client, parameters)``."""
