"""``package.module:name`` import paths, as the command line takes agents and harnesses.

>>> import_object("json:dumps", "harness").__name__
'dumps'
>>> import_object("json", "harness")
Traceback (most recent call last):
...
ValueError: a harness import path looks like 'package.module:name', got 'json'
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

__all__ = ["import_object"]


def import_object(path: str, what: str) -> Any:
    """The object ``path`` names (``package.module:name``); ``what`` names it in errors ("agent", "harness").

    A module that is not importable from ``sys.path`` is looked for in the working folder too, as ``python -m``
    would (``agentrl train --harness examples.my_agent:run`` from a project folder).

    Raises:
        ValueError: a malformed path, a module that cannot be imported, or a missing name.
    """
    module_name, _, name = str(path).partition(":")
    if not module_name or not name:
        raise ValueError(f"a {what} import path looks like 'package.module:name', got {path!r}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name.split(".")[0] or os.getcwd() in sys.path:
            raise ValueError(f"cannot import {module_name!r} for {what} {path!r}: {exc}") from None
        sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(module_name)
        except ImportError as again:
            raise ValueError(f"cannot import {module_name!r} for {what} {path!r}: {again}") from None
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r} for {what} {path!r}: {exc}") from None
    try:
        return getattr(module, name)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no {name!r} ({what} {path!r})") from None
