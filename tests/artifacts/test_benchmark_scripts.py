"""The project's own speed scripts in ``benchmarks/``: each runs as ``python benchmarks/X.py``, outside the wheel."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import ROOT

SCRIPTS = sorted(path.name for path in (ROOT / "benchmarks").glob("*.py") if path.name != "__init__.py")


# the speed scripts that moved out of agentrl/bench (issue 31); later scripts join the folder beside them
MOVED = (
    "sandbox.py sandbox_tiers.py concurrency.py rollout.py rollout_pixels.py trl_compare.py train_overlap.py"
    " tirmath_reset.py osworld.py games.py search.py sql.py learn_smollm2.py consult_fidelity.py"
).split()


def test_the_scripts_are_all_there() -> None:
    assert set(MOVED) <= set(SCRIPTS), sorted(set(MOVED) - set(SCRIPTS))
    assert not any((ROOT / "agentrl" / "bench" / name).exists() for name in SCRIPTS)  # moved, not copied


@pytest.mark.parametrize("name", SCRIPTS)
def test_each_script_runs_as_a_file_from_anywhere(name: str, tmp_path: Path) -> None:
    # from another folder than the repository (sibling imports must not rest on the cwd): the strict case of the
    # README's `python benchmarks/X.py`, whose folder Python puts on the path whatever the cwd
    path = str(ROOT / "benchmarks" / name)
    done = subprocess.run([sys.executable, path, "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout


def test_the_wheel_holds_only_the_package_and_the_committed_figures_are_found() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '[tool.setuptools.packages.find]\ninclude = ["agentrl*"]\n' in pyproject
    from benchmarks import learn_smollm2

    assert learn_smollm2.COMMITTED == ROOT / "benchmarks" / "results" / "learn_smollm2.json"
    assert learn_smollm2.COMMITTED.exists() and (ROOT / "benchmarks" / "results" / "learn_smollm2.png").exists()


def test_recorded_results_carry_no_path_of_the_machine_they_ran_on() -> None:
    """A result names files as the repository does (``tests/envs/osworld/...``), never ``/home/...`` or a checkout."""
    import re

    machine_path = re.compile(r'"(/(?:work|root|home|tmp|Users)/[^"]*)"')
    for path in sorted((ROOT / "benchmarks" / "results").glob("*.json")):
        found = machine_path.findall(path.read_text())
        assert not found, f"{path.name} records machine paths: {found[:3]}"
