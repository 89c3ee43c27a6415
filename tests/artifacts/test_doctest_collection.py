"""``--doctest-modules`` as the root ``conftest.py`` sets it up: doctests named from the source, each module imported
only when one of its doctests runs, and a doctest that pytest's own finder would not see fails instead of vanishing.

Each check runs pytest on a small package of its own, with copies of the repository's ``conftest.py`` and
``tests/doctest_collection.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

MODULES = {
    "pkg/__init__.py": "",
    # imported at collection, it would leave a file behind
    "pkg/loud.py": '''"""A module that says when it is imported.

>>> 1 + 1
2
"""
import os
from pathlib import Path

Path(os.environ["IMPORTED"]).write_text("pkg.loud")


class Board:
    def moves(self):
        """The moves.

        >>> Board().moves()
        [1, 2]
        """
        return [1, 2]

    if True:
        def cells(self):
            """The cells.

            >>> len(Board().cells())
            9
            """
            return list(range(9))
''',
    # the name is bound again after the def: doctest's finder, which reads the module's namespace, never sees the
    # docstring, and the source does
    "pkg/hidden.py": '''def opened():
    """Three.

    >>> opened()
    3
    """
    return 3


opened = print
''',
    "pkg/plain.py": "def f():\n    'no examples here'\n",
}


def run_pytest(tmp_path: Path, *args: str, eager: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "IMPORTED": str(tmp_path / "imported"), "AGENTRL_EAGER_DOCTESTS": "1" if eager else ""}
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--doctest-modules", "--import-mode=importlib",
         "-p", "no:xdist", *args, "pkg"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


def make_package(tmp_path: Path) -> None:
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "doctest_collection.py", tmp_path / "tests" / "doctest_collection.py")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    for name, text in MODULES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)


def collected(run: subprocess.CompletedProcess[str]) -> list[str]:
    return sorted(line for line in run.stdout.splitlines() if "::" in line)


def test_collection_imports_no_module_and_names_the_doctests_as_pytest_does(tmp_path: Path) -> None:
    make_package(tmp_path)
    lazy = run_pytest(tmp_path, "--collect-only", "-q")
    assert lazy.returncode == 0, lazy.stdout + lazy.stderr
    assert not (tmp_path / "imported").exists(), "collecting the doctests imported pkg.loud"
    eager = run_pytest(tmp_path, "--collect-only", "-q", eager=True)
    assert eager.returncode == 0, eager.stdout + eager.stderr
    assert (tmp_path / "imported").exists()  # pytest's own collection imports it: the check above can fail
    # the same ids, but the doctest that pytest's finder does not see, which the source names (and then fails)
    hidden = "pkg/hidden.py::pkg.hidden.opened"
    assert collected(lazy) == sorted([*collected(eager), hidden]), (lazy.stdout, eager.stdout)
    assert "pkg/loud.py::pkg.loud.Board.cells" in collected(lazy)


def test_running_imports_the_module_and_a_doctest_the_finder_misses_fails_by_name(tmp_path: Path) -> None:
    make_package(tmp_path)
    run = run_pytest(tmp_path, "-q", "-rA")
    assert (tmp_path / "imported").read_text() == "pkg.loud"
    assert "PASSED pkg/loud.py::pkg.loud.Board.moves" in run.stdout, run.stdout
    assert "PASSED pkg/loud.py::pkg.loud.Board.cells" in run.stdout, run.stdout
    assert "ERROR pkg/hidden.py::pkg.hidden.opened" in run.stdout, run.stdout
    assert "only in the source ['pkg.hidden.opened']" in run.stdout, run.stdout
    assert run.returncode == 1, run.stdout
