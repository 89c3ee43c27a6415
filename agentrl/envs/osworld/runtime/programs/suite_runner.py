"""Runs one test function of an OSWorld gold test suite and prints its verdict after a marker line.

Runs where: in a child of the evaluating process (a fresh interpreter, its own process group, killed at the
deadline), started by :func:`~agentrl.envs.osworld.evaluators.multi_apps.check_python_file_by_test_suite`:
``python -c <this file's text> <test file> <function name> <marker> <folder>...``. The folders go first on
``sys.path`` (the test file's, then the result files'), so the suite imports the agent's code. Prints
``<marker>1`` when the function returns a true value, ``<marker>0`` when it returns a false one or raises; an
import error or a crash prints no verdict. Standard library only.

Why a separate file: it is a whole program, so ruff, mypy and the import graph read it as one; importing it runs
nothing.
"""

from __future__ import annotations

import importlib.util
import sys


def main(argv: list[str]) -> None:
    """``argv``: ``[-c, <test file>, <function name>, <marker>, <folder>...]``."""
    test_file, name, marker = argv[1], argv[2], argv[3]
    for folder in reversed(argv[4:]):
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location("dynamic_module", test_file)
    if spec is None or spec.loader is None:
        sys.exit(f"cannot load {test_file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["dynamic_module"] = module
    spec.loader.exec_module(module)
    test = getattr(module, name)
    try:
        passed = bool(test())
    except Exception:
        passed = False
    sys.stdout.flush()
    sys.stdout.write("\n" + marker + ("1" if passed else "0") + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv)
