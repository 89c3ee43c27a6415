"""Doctests found in the source and imported only when they run.

pytest's ``--doctest-modules`` imports every module to find its doctests. Under xdist each worker collects the
whole suite, so each imported all of ``agentrl`` (verifiers, verl, skyrl-gym, anthropic, ray...): 25 of the 41
CPU-seconds of a worker's collection, before its first test, for doctests two thirds of which run on another worker.

Here a module's doctests are named from its syntax tree: the docstrings of the module and of the classes,
functions and methods defined in it (at module level, in a class, or under an ``if``/``try``/``with``), which are
where doctest's own finder looks; a docstring counts when doctest's parser finds an example in it. The items get
the names pytest's collection gives them. The module is imported when one of its doctests runs: pytest's own
collection then runs on it, and it must find exactly the doctests the tree named, or that doctest fails saying
which differ. So a doctest that pytest's collection would not run (a name bound again after its def, say) is never
taken for one that runs. A file whose text has ``>>>`` that the tree places in no docstring, or that sets
``__test__``, is collected by pytest's own collector, as before.

The root ``conftest.py`` turns this on for ``--doctest-modules`` (the ``addopts``); ``AGENTRL_EAGER_DOCTESTS=1``
turns it off.
"""

from __future__ import annotations

import ast
import doctest
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest.doctest import (
    DoctestItem,
    DoctestModule,
    _get_checker,
    _get_continue_on_failure,
    _get_runner,
    get_optionflags,
)
from _pytest.pathlib import CouldNotResolvePathError, module_name_from_path, resolve_pkg_root_and_module_name

_PARSER = doctest.DocTestParser()
#: statements whose bodies run when the module (or class) body runs: definitions under them are found too
_BLOCKS = (ast.If, ast.Try, ast.With)


def _has_examples(node: ast.AST) -> bool:
    text = ast.get_docstring(node, clean=False)  # type: ignore[arg-type]
    return bool(text and _PARSER.get_examples(text))


def _bodies(node: ast.AST) -> Iterator[list[ast.stmt]]:
    for field in ("body", "orelse", "finalbody"):
        body = getattr(node, field, None)
        if body:
            yield body
    for handler in getattr(node, "handlers", ()):
        yield handler.body


def _definitions(bodies: Iterable[list[ast.stmt]]) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    for body in bodies:
        for statement in body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield statement
            elif isinstance(statement, _BLOCKS):
                yield from _definitions(_bodies(statement))


def doctest_names(source: str, module_name: str) -> list[tuple[str, int]] | None:
    """``(name, 0-based line)`` of every docstring with examples, sorted by name as pytest orders them; ``None``
    when the tree cannot be trusted to have found them all (``__test__``, or ``>>>`` outside every docstring).

    >>> code = "def f():\\n    '>>> 1 + 1'\\nclass C:\\n    def g(self):\\n        'no example'\\n"
    >>> doctest_names(code, "m")
    [('m.f', 1)]
    >>> doctest_names("x = '>>> 1'\\n", "m") is None
    True
    """
    if ">>>" not in source:
        return []
    tree = ast.parse(source)
    found: dict[str, int] = {}

    def visit(node: ast.AST, name: str) -> None:
        if _has_examples(node):
            found.setdefault(name, node.body[0].lineno - 1)  # type: ignore[attr-defined]
        if isinstance(node, (ast.Module, ast.ClassDef)):
            for definition in _definitions(_bodies(node)):
                visit(definition, f"{name}.{definition.name}")

    visit(tree, module_name)
    sets_test = any(isinstance(node, ast.Name) and node.id == "__test__" for node in ast.walk(tree))
    if sets_test or not found:
        return None
    return sorted(found.items())


def module_name(path: Path, config: pytest.Config) -> str:
    """The name pytest's importlib mode gives the module at ``path`` (its package path, else one from the rootdir)."""
    try:
        return resolve_pkg_root_and_module_name(
            path, consider_namespace_packages=config.getini("consider_namespace_packages")
        )[1]
    except CouldNotResolvePathError:
        return module_name_from_path(path, config.rootpath)


class SourceDoctestModule(DoctestModule):
    """A module's doctests, named from its source; the module is imported when the first of them runs."""

    names: list[tuple[str, int]]
    _found: dict[str, DoctestItem] | None = None

    def collect(self) -> Iterable[DoctestItem]:  # type: ignore[override]
        runner = _get_runner(
            verbose=False,
            optionflags=get_optionflags(self.config),
            checker=_get_checker(),
            continue_on_failure=_get_continue_on_failure(self.config),
        )
        for name, line in self.names:
            yield SourceDoctestItem.from_parent(self, name=name, runner=runner, dtest=None, line=line)  # type: ignore[arg-type]

    def found(self) -> dict[str, DoctestItem]:
        """pytest's own doctest items of the module (importing it), checked against the names from the source."""
        if self._found is None:
            found = {item.name: item for item in DoctestModule.collect(self)}
            named = {name for name, _ in self.names}
            if set(found) != named:
                only_source, only_module = sorted(named - set(found)), sorted(set(found) - named)
                raise pytest.fail.Exception(
                    f"{self.path}: the doctests named from the source differ from those pytest finds in the module: "
                    f"only in the source {only_source}, only in the module {only_module}; "
                    "doctest's finder reads the module's namespace, where a name bound again after its def, or a "
                    "decorator from another module, hides a docstring: move that example to a docstring the module "
                    "keeps, or run with AGENTRL_EAGER_DOCTESTS=1 to compare with pytest's own collection"
                )
            self._found = found
        return self._found


class SourceDoctestItem(DoctestItem):
    """One doctest, found in the source; its :class:`doctest.DocTest` is read from the module when it runs."""

    def __init__(self, *args: Any, line: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.line = line

    @classmethod
    def from_parent(cls, parent: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return cls._create(parent=parent, **kwargs)

    def setup(self) -> None:
        assert isinstance(self.parent, SourceDoctestModule)
        found = self.parent.found()[self.name]
        self.dtest, self.runner = found.dtest, found.runner
        super().setup()

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, self.line, f"[doctest] {self.name}"


def collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """What ``--doctest-modules`` collects from ``file_path``: its doctests from the source, pytest's own module
    collector where the source cannot be trusted, or ``None`` (no doctest; not a Python file)."""
    if file_path.suffix != ".py" or file_path.name in ("__main__.py", "setup.py"):
        return None
    if file_path.name == "conftest.py":  # imported already, and pytest imports it its own way
        return DoctestModule.from_parent(parent, path=file_path)
    names = doctest_names(file_path.read_text(encoding="utf-8"), module_name(file_path, parent.config))
    if names is None:
        return DoctestModule.from_parent(parent, path=file_path)
    if not names:
        return None
    module = SourceDoctestModule.from_parent(parent, path=file_path)
    module.names = names
    return module
