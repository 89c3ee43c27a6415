"""The programs the desktop runs in other processes than the server's: each a module of its own, run from its text.

They run inside the desktop's sandbox (:class:`~agentrl.envs.osworld.runtime.jail.Jail`), or in the pyautogui
worker there, under an interpreter set up differently from the server's (``python -I``, ``-I -S``: no
``site-packages``, the sandbox's ``python3``, or the system's ``/usr/bin/python3``), where the ``agentrl`` package
is not there to import (the sandbox binds the interpreter's folders, not a checkout); one, the evaluators' test
suite runner, runs in a throwaway child of the evaluating process. So each is a standard-library program (PIL and
python-xlib where the sandbox's ``python3`` imports them, ``gi`` in the system's), imports nothing of ``agentrl``,
takes its arguments in ``argv`` (never by editing its text), and does its work
only under ``if __name__ == "__main__":`` (or in functions a caller runs): importing it here, for ruff, mypy,
the doctests and the layers test, has no side effect. A separate file, not a string in its caller, so that
ruff, mypy and the import graph read it like any other module.

The host reads a program's text with :func:`source` (:mod:`importlib.resources`, from the installed package)
and hands it over as it always did, so nothing the sandbox can write is ever run:

* :mod:`.supervisor`: the jail's supervisor, written by the host into the jail's private folder (read-only in the
  sandbox) and run from there, ``python -I <folder>/supervisor.py <socket fd> <max file size>``;
* :mod:`.pyautogui_worker`: the pyautogui worker, ``python -I -c <text> <request fd> <reply fd> <config>``;
* :mod:`.hotkey_grabber`: the ``ctrl+alt+t`` daemon, ``python -I -S -c <text> <config>``;
* :mod:`.xterm_reader`: reads the active xterm's text, ``python3 -c <text> <print dir> <timeout>``;
* :mod:`.paint_wallpaper`: paints the wallpaper on the root window, ``python3 -c <text> <image>``;
* :mod:`.display_reset`: code the pyautogui worker runs (its text and then a call) to release keys and buttons
  and to clear the display at a reset;
* :mod:`.hide_modules`: the import hook of the sandbox's ``python3``, copied into its virtual environment;
* :mod:`.a11y_dump`: writes the accessibility tree as OSWorld's XML, ``/usr/bin/python3 -I -c <text> <max nodes>
  <max depth> <max width> <max text>``;
* :mod:`.vlc_status`: asks VLC's HTTP interface for its status, ``python3 -c <text> <port> <password>``;
* :mod:`.suite_runner`: runs a gold test suite's function for ``check_python_file_by_test_suite``, ``python -c
  <text> <test file> <function> <marker> <folder>...`` (on the evaluating side, in its own process group).

None of them imports ``agentrl``; beyond the standard library they import only what the interpreter that runs
them has (the worker's ``pyautogui``, the sandbox ``python3``'s PIL and python-xlib, the system Python's ``gi``):

>>> import ast, sys
>>> def imported(name):
...     nodes = list(ast.walk(ast.parse(source(name))))
...     found = {alias.name for node in nodes if isinstance(node, ast.Import) for alias in node.names}
...     found |= {node.module for node in nodes if isinstance(node, ast.ImportFrom) and node.module}
...     return {module.split(".")[0] for module in found} - set(sys.stdlib_module_names) - {"__future__"}
>>> for name in NAMES:
...     if imported(name):
...         print(name, sorted(imported(name)))
a11y_dump ['gi']
display_reset ['Xlib', 'pyautogui']
paint_wallpaper ['PIL', 'Xlib']
pyautogui_worker ['pyautogui']
"""

from __future__ import annotations

import functools
from importlib import resources

__all__ = ["NAMES", "source"]

NAMES = (
    "a11y_dump",
    "display_reset",
    "hide_modules",
    "hotkey_grabber",
    "paint_wallpaper",
    "pyautogui_worker",
    "suite_runner",
    "supervisor",
    "vlc_status",
    "xterm_reader",
)
"""The programs of this package, by module name."""


@functools.cache
def source(name: str) -> str:
    """The text of the program ``name`` (one of :data:`NAMES`), as the file in the package holds it."""
    if name not in NAMES:
        raise ValueError(f"no desktop program {name!r}; the programs are {', '.join(NAMES)}")
    return (resources.files(__name__) / f"{name}.py").read_text(encoding="utf-8")
