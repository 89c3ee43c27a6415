"""The quickstart's test-loop times are the ones a fresh-clone run recorded, never hand-copied figures.

``python scripts/timed.py RUN --summary --record`` puts a ``make test`` or ``make check`` run into
``benchmarks/results/test_times.json`` (one entry per target); the quickstart quotes each entry's phase line as
``make`` printed it. A new record without a new quote, or a quote without its record, fails here.
"""

from __future__ import annotations

import importlib.util
import json
from types import ModuleType

import pytest

from tests.paths import ROOT

RECORD = ROOT / "benchmarks" / "results" / "test_times.json"
QUICKSTART = ROOT / "docs" / "guides" / "quickstart.md"


def _timed() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agentrl_scripts_timed", ROOT / "scripts" / "timed.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("target", ["test", "check"])
def test_quickstart_quotes_the_recorded_run(target: str) -> None:
    record = json.loads(RECORD.read_text())
    assert target in record, f"no make {target} run in {RECORD.name}: python scripts/timed.py RUN --summary --record"
    line = _timed().phases_line(record[target])
    text = " ".join(QUICKSTART.read_text().split())  # the quote may wrap over comment lines
    text = text.replace(" # ", " ")
    assert line in text, f"docs/guides/quickstart.md should quote the recorded make {target} run: {line!r}"
    assert all(p["exit"] == 0 for p in record[target]["phases"]), f"the recorded make {target} run failed a phase"


def test_the_line_follows_the_phases() -> None:
    data = {"phases": [{"phase": "mypy", "seconds": 60, "exit": 0}, {"phase": "pytest-main", "seconds": 600.5}]}
    assert _timed().phases_line(data) == "mypy 1.0 min, pytest-main 10.0 min; 11.0 min in all"
