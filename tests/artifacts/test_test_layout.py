"""``tests/`` mirrors the package: a test module lives in the folder of what it tests.

``tests/<package>/`` for each top-level package of ``agentrl`` (``tests/envs/<domain>/`` for a domain, and deeper
folders as the domain has them: ``tests/envs/osworld/runtime/``), ``tests/cli/`` for the command and the face
modules (``cli``, ``scaffold``, ``_system_deps``, ``testing``), ``tests/artifacts/`` for what is not a module
(the README, the guides, the examples, the benchmark scripts, the docs site, the layout itself) and
``tests/security/`` for the attacks across boundaries. A new test module anywhere else fails here.
"""

from __future__ import annotations

from pathlib import Path

from tests.paths import ROOT, TESTS

#: folders of tests/ that stand for no package folder
OUTSIDE_THE_PACKAGE = ("artifacts", "security", "cli")


def misplaced(tests: Path = TESTS, package: Path = ROOT / "agentrl") -> list[str]:
    """The test modules that sit outside the mirror, as paths relative to ``tests``."""
    wrong = []
    for path in sorted(tests.rglob("test_*.py")):
        folders = path.relative_to(tests).parts[:-1]
        if "fixtures" in folders:
            continue  # data that happens to be Python (a benchmark's own files)
        if not folders:
            wrong.append(str(path.relative_to(tests)))
        elif folders[0] in OUTSIDE_THE_PACKAGE:
            if len(folders) > 1:
                wrong.append(str(path.relative_to(tests)))
        elif not (package.joinpath(*folders)).is_dir():
            wrong.append(str(path.relative_to(tests)))
    return wrong


def test_every_test_module_sits_in_the_mirror() -> None:
    wrong = misplaced()
    assert not wrong, (
        f"test modules outside the mirror of agentrl/: {wrong}; put each in tests/<the package folder it tests>/ "
        f"(or tests/{{{','.join(OUTSIDE_THE_PACKAGE)}}}/): see tests/artifacts/test_test_layout.py"
    )


def test_the_check_can_fail(tmp_path: Path) -> None:
    package = tmp_path / "agentrl"
    (package / "core").mkdir(parents=True)
    for name in ("test_flat.py", "core/test_ok.py", "nosuch/test_x.py", "artifacts/test_readme.py",
                 "artifacts/deep/test_y.py"):
        (tmp_path / "tests" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "tests" / name).write_text("")
    assert misplaced(tmp_path / "tests", package) == ["artifacts/deep/test_y.py", "nosuch/test_x.py", "test_flat.py"]


GROUPED = '''
import os

import pytest


@pytest.mark.xdist_group("one_engine")
@pytest.mark.parametrize("n", range(4))
def test_grouped(n, request):
    assert request.node.nodeid.endswith("@one_engine"), request.node.nodeid
    with open(os.path.join(os.environ["GROUPED_OUT"], f"worker-{n}"), "w") as out:
        out.write(os.environ["PYTEST_XDIST_WORKER"])
'''


def test_xdist_groups_keep_their_tests_on_one_worker(tmp_path: Path) -> None:
    """``make test``'s ``--dist loadgroup`` must really group: one Docker engine and one Ray at a time rely on it
    (pytest 9.2 broke pytest-xdist 3.8's grouping silently, and two Rays then joined each other)."""
    import os
    import subprocess
    import sys

    (tmp_path / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "out").mkdir()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
         str(tmp_path / "test_grouped.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "GROUPED_OUT": str(tmp_path / "out")},
    )  # fmt: skip
    assert run.returncode == 0, (
        f"--dist loadgroup did not group (pyproject pins pytest<9.2 for pytest-xdist 3.8):\n{run.stdout[-2000:]}"
    )
    workers = {(tmp_path / "out" / f"worker-{n}").read_text() for n in range(4)}
    assert len(workers) == 1, f"one group ran on {sorted(workers)}"


def test_each_xdist_worker_and_its_subprocesses_run_torch_on_one_thread() -> None:
    """tests/conftest.py gives each xdist worker one OpenMP thread, and the processes a test starts inherit it: with
    one thread per core in each, the workers' spinning threads cost the suite several times the CPU."""
    import os
    import subprocess
    import sys

    import pytest

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("not under pytest-xdist: a single pytest process keeps torch's default threads")
    torch = pytest.importorskip("torch")
    child = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert (torch.get_num_threads(), child.stdout.strip()) == (1, "1")


PRINT_GROUPS = '''
def pytest_collection_finish(session):
    for item in session.items:
        marker = item.get_closest_marker("xdist_group")
        print("GROUP", item.nodeid, marker.args[0] if marker else None)
'''


def test_a_module_that_shares_a_session_fixture_of_its_own_stays_on_one_worker(tmp_path: Path) -> None:
    """SmolLM2's conversion is a session fixture of its test module: spread test by test, each worker that drew one
    of its tests converted the model again (about 30 s each). The module's tests share a group; a module whose
    tests share nothing is spread."""
    import os
    import subprocess
    import sys

    (tmp_path / "print_groups.py").write_text(PRINT_GROUPS)
    modules = ["tests/llm/test_backend_smollm2.py", "tests/llm/test_backend_transformers.py",
               "tests/core/test_registry.py"]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "print_groups",
         *modules],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
    )  # fmt: skip
    groups: dict[str, set[str]] = {}
    for line in run.stdout.splitlines():
        if line.startswith("GROUP "):
            _, nodeid, group = line.split(" ", 2)
            groups.setdefault(nodeid.split("::")[0], set()).add(group)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    # the tests that use the fixture share the module's group (one that uses none of them may go anywhere)
    assert groups["tests/llm/test_backend_transformers.py"] - {"None"} == {"tests/llm/test_backend_transformers.py"}
    assert groups["tests/core/test_registry.py"] == {"None"}
    if "tests/llm/test_backend_smollm2.py" in groups:  # collected where the embedded model is installed
        assert groups["tests/llm/test_backend_smollm2.py"] - {"None"} == {"tests/llm/test_backend_smollm2.py"}
