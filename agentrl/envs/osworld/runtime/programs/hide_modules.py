"""An import hook of the desktop sandbox's ``python3``: some of the server's own packages do not import there.

Runs where: in every ``python``/``python3`` started inside the desktop's sandbox, at start-up.
:func:`~agentrl.envs.osworld.runtime.jail.write_python_shim` copies this file into the virtual environment it
makes for that ``python3`` (as ``_agentrl_hidden_modules.py``) and a ``.pth`` file there runs
``import _agentrl_hidden_modules; _agentrl_hidden_modules.install(<hidden modules>, <the server's site folders>)``.
So the modules named (``lxml``: OSWorld's VM's ``python3`` has none) do not import from the server's packages,
while one the user put elsewhere (``PYTHONPATH``, a folder of theirs) still does.

Why a separate file: it is Python that runs in another interpreter; as a module, ruff and mypy read it.
Standard library only, and importing it installs nothing (:func:`install` does).
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import types
from collections.abc import Sequence


class HideServerModules:
    """A ``sys.meta_path`` finder: ``hidden`` top-level modules are looked for only outside ``server_sites``."""

    def __init__(self, hidden: list[str], server_sites: list[str]) -> None:
        self.hidden = frozenset(hidden)
        self.server_sites = tuple(server_sites)

    def _ours(self, entry: str) -> bool:
        real = os.path.realpath(entry or os.curdir)
        return any(real == site or real.startswith(site + os.sep) for site in self.server_sites)

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """The spec of a hidden module found outside the server's folders; ``None`` for every other module."""
        if path is not None or name not in self.hidden:
            return None
        # One the user put elsewhere (PYTHONPATH, a folder of theirs) still imports.
        spec = importlib.machinery.PathFinder.find_spec(name, [p for p in sys.path if not self._ours(p)])
        if spec is None:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return spec


def install(hidden: list[str], server_sites: list[str]) -> None:
    """Put the finder first on ``sys.meta_path``."""
    sys.meta_path.insert(0, HideServerModules(hidden, server_sites))
