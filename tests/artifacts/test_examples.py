"""Every ``examples/*.py`` runs with ``--quick`` in a process of its own, as CI runs it (one that starts with torch
and transformers imported: ``tests/warm_python.py``).

Conventions (see ``examples/README.md``): each example has a module docstring with its command,
accepts ``--quick``, may declare ``REQUIRES = ["package", ...]`` (the test skips it, with the
reason, when one of them cannot be imported) and ``SLOW = True`` (the run is marked ``slow``), and
prints ``SKIP: <reason>`` and exits 0 when it finds a dependency missing at run time.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import warm_python
from tests.paths import ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
# A hang guard, not a speed test: an example's --quick run takes 10-40 s alone, but next to a busy second test
# worker and other load on 2 cores sb3_tictactoe's took over 120 s once.
TIMEOUT_S = 240


def _module_constants(path: Path) -> tuple[str | None, list[str], bool]:
    """The example's docstring, its ``REQUIRES`` list and its ``SLOW`` flag, read without importing it."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    requires: list[str] = []
    slow = False
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        names = {t.id for t in targets if isinstance(t, ast.Name)}
        if "REQUIRES" in names:
            requires = [str(item) for item in ast.literal_eval(value)]
        if "SLOW" in names:
            slow = bool(ast.literal_eval(value))
    return ast.get_docstring(tree), requires, slow


def _missing(requires: list[str]) -> list[str]:
    """The required modules that cannot be imported here."""
    missing = []
    for name in requires:
        try:
            if importlib.util.find_spec(name) is None:
                missing.append(name)
        except (ImportError, ValueError):
            missing.append(name)
    return missing


def _params(runs: bool = False) -> list:
    """One param per example; for the runs, an example that starts Ray joins the ``ray`` group (tests/tiers.py):
    one Ray per machine, or a second ``ray.init`` joins the first (the verl example took 161 s beside a Ray test,
    73 s alone)."""
    params = []
    for path in EXAMPLES:
        _, requires, slow = _module_constants(path)
        marks = [pytest.mark.slow] if slow else []
        if runs and "ray" in requires:
            marks.append(pytest.mark.xdist_group("ray"))
        params.append(pytest.param(path, marks=marks, id=path.stem))
    return params


def test_examples_exist() -> None:
    """The examples folder is found (a wrong glob would silently test nothing)."""
    assert len(EXAMPLES) >= 6, EXAMPLES


@pytest.mark.parametrize("path", _params())
def test_example_is_documented(path: Path) -> None:
    """Each example has a docstring with its ``--quick`` command and is listed in examples/README.md."""
    docstring, _, _ = _module_constants(path)
    assert docstring, f"{path.name} has no module docstring"
    assert f"examples/{path.name}" in docstring, f"{path.name}: the docstring should show its command"
    readme = (ROOT / "examples" / "README.md").read_text(encoding="utf-8")
    assert f"examples/{path.name}" in readme, f"examples/README.md does not list {path.name}"


@pytest.mark.timeout(TIMEOUT_S + 60)
@pytest.mark.parametrize("path", _params(runs=True))
def test_example_runs_quick(path: Path) -> None:
    """``python examples/NAME.py --quick`` exits 0 within the time limit (skipped when a dependency is missing)."""
    _, requires, _ = _module_constants(path)
    missing = _missing(requires)
    if missing:
        pytest.skip(f"{path.name} needs {', '.join(missing)} (not installed)")
    env = dict(os.environ)
    env["HF_HUB_OFFLINE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    start = time.perf_counter()
    try:
        proc = warm_python.run([sys.executable, str(path), "--quick"], cwd=ROOT, env=env, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"")[-3000:] if isinstance(exc.stdout, bytes) else (exc.stdout or "")[-3000:]
        pytest.fail(f"{path.name} --quick took more than {TIMEOUT_S} s; output so far:\n{out}")
    seconds = time.perf_counter() - start
    tail = f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    skip = next((line for line in proc.stdout.splitlines() if line.startswith("SKIP:")), None)
    if proc.returncode == 0 and skip is not None:
        pytest.skip(f"{path.name}: {skip[len('SKIP:') :].strip()}")
    assert proc.returncode == 0, f"{path.name} --quick exited {proc.returncode} after {seconds:.0f} s\n{tail}"
    assert proc.stdout.strip(), f"{path.name} printed nothing\n{tail}"
