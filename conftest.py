"""The repository's pytest set-up for every collected folder (``tests/``, ``agentrl/``, ``benchmarks/``, ``docs/``).

``--doctest-modules`` (in ``addopts``) collects each module's doctests from its source and imports the module
only when one of them runs (``tests/doctest_collection.py`` says why and how); ``AGENTRL_EAGER_DOCTESTS=1`` keeps
pytest's own collection, which imports every module.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import pytest

_LAZY = pytest.StashKey[bool]()


def _doctest_collection() -> Any:
    """tests/doctest_collection.py, loaded by its path (verl installs a package called ``tests``)."""
    name = "agentrl_test_doctest_collection"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).parent / "tests" / "doctest_collection.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def pytest_configure(config: pytest.Config) -> None:
    """Take ``.py`` files from pytest's doctest plugin when ``--doctest-modules`` is on and not made eager."""
    lazy = bool(config.option.doctestmodules) and os.environ.get("AGENTRL_EAGER_DOCTESTS", "") in ("", "0")
    config.stash[_LAZY] = lazy
    if lazy:  # pytest's doctest plugin collects nothing from .py files now: pytest_collect_file below does
        config.option.doctestmodules = False


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A ``.py`` file's doctests, named from its source (see ``tests/doctest_collection.py``)."""
    if not parent.config.stash.get(_LAZY, False):
        return None
    return _doctest_collection().collect_file(file_path, parent)
