"""Whether optional packages are installed, found without importing them.

Every xdist worker collects every test module, so a module-level import (or ``pytest.importorskip``, which
imports) of verl, trl or verifiers costs seconds in each worker, though one worker runs those tests. A test
module checks with :func:`skip_module_unless_installed` and imports what it uses inside its tests.
"""

from __future__ import annotations

import importlib.util

import pytest


def missing(*names: str) -> list[str]:
    """The top-level modules of ``names`` that cannot be found (``find_spec``: nothing is imported)."""
    return [name for name in names if importlib.util.find_spec(name) is None]


def skip_module_unless_installed(*names: str, reason: str | None = None) -> None:
    """Skip the calling test module when one of ``names`` is not installed; ``reason`` says how to install it."""
    absent = missing(*names)
    if absent:
        pytest.skip(reason or f"needs {', '.join(absent)} (not installed)", allow_module_level=True)
