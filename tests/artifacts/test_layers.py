"""The layers contract: a module of ``agentrl`` imports only from its own layer or below; no import cycles.

Layers, bottom to top (docs/design/layers.md, which a test here holds to this list)::

    core < serving < sandboxes < llm (agentrl.llm) < envs < wrappers = agents < rollout < league < train
         < bench < face (cli, integrations, testing, demo)

The checker reads every module's source with :mod:`ast` (nothing is imported): ``import a.b``,
``from a import b``, relative imports (``from ..x import y``), imports inside functions and
``importlib.import_module("...")`` with a literal (or f-string literal prefix) name. It is written
to run on any tree, so a unit test plants upward imports and a cycle in a scratch package and checks
that each is reported with its module, line and target.
"""

from __future__ import annotations

import ast
import doctest
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.paths import ROOT

PACKAGE = "agentrl"

#: bottom to top; names on one rank form one layer (wrappers and agents sit side by side)
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("serving",),
    ("sandboxes",),
    ("llm",),
    ("envs",),
    ("wrappers", "agents"),
    ("rollout",),
    ("league",),
    ("train",),
    ("bench",),
    ("face",),
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}
# _system_deps: the stdlib-only set-up script `make` runs before the venv exists (imports nothing of ours).
# scaffold: the domain template that `agentrl new-domain` writes.
FACE = ("cli", "integrations", "testing", "demo", "_system_deps", "scaffold")


def layer_of(module: str) -> str | None:
    """The layer of a dotted module name (``None``: outside ``agentrl``, or the root package itself).

    ``cli``, ``integrations``, ``testing``, ``demo`` and ``_system_deps`` are the face; every other
    top-level package is the layer of its own name (``agentrl.llm`` is the llm layer).
    """
    parts = module.split(".")
    if parts[0] != PACKAGE or len(parts) < 2:
        return None
    top = parts[1]
    if top in FACE:
        return "face"
    return top if top in RANK else "?"


def unit_of(module: str) -> str | None:
    """The top-level package a module belongs to, for the cycle check."""
    parts = module.split(".")
    if parts[0] != PACKAGE or len(parts) < 2:
        return None
    return parts[1]


@dataclass(frozen=True)
class Upward:
    """One import of a higher layer."""

    module: str
    line: int
    target: str
    source_layer: str
    target_layer: str

    def __str__(self) -> str:
        return f"{self.module} ({self.source_layer}) line {self.line} imports {self.target} ({self.target_layer})"


def module_name(path: Path, root: Path) -> str:
    """``root/agentrl/x/y.py`` -> ``agentrl.x.y``; a package's ``__init__.py`` is the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve_relative(module: str, is_package: bool, level: int, name: str | None) -> str:
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (level - 1)] if level > 1 else package
    if level - 1 > len(package):
        raise ValueError(f"{module}: relative import beyond the top-level package")
    return ".".join(base + ([name] if name else []))


def _literal_prefix(node: ast.expr) -> str | None:
    """The module name of ``import_module("a.b")``, or the literal head of ``f"a.b.{x}"``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        head = node.values[0]
        if isinstance(head, ast.Constant) and isinstance(head.value, str):
            return head.value.rstrip(".")
    return None


def imports_of(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """Every ``(line, imported module)`` in ``source``, wherever it sits (functions included).

    ``from a import b`` yields ``a.b`` (``b`` may be a submodule, as in ``from agentrl import cli``;
    for an attribute the layer is the same as ``a``'s).
    """
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = _resolve_relative(module, is_package, node.level, node.module)
            found.extend((node.lineno, f"{base}.{alias.name}" if alias.name != "*" else base) for alias in node.names)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name == "import_module":
                target = _literal_prefix(node.args[0])
                if target:
                    found.append((node.lineno, target))
    return found


@dataclass
class Report:
    """What :func:`check_layers` found."""

    modules: list[str]
    imports: int
    upward: list[Upward]
    unmapped: list[str]
    cycles: list[list[str]]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(components)


def check_layers(root: Path) -> Report:
    """Read every module under ``root/agentrl`` and report upward imports and cycles between packages."""
    modules: list[str] = []
    upward: list[Upward] = []
    unmapped: list[str] = []
    edges: dict[str, set[str]] = {}
    count = 0
    for path in sorted((root / PACKAGE).rglob("*.py")):
        module = module_name(path, root)
        modules.append(module)
        source_layer = layer_of(module)
        if source_layer == "?":
            unmapped.append(module)
        is_package = path.name == "__init__.py"
        for line, target in imports_of(path.read_text(encoding="utf-8"), module, is_package):
            count += 1
            target_layer = layer_of(target)
            if source_layer in RANK and target_layer in RANK and RANK[target_layer] > RANK[source_layer]:
                upward.append(Upward(module, line, target, source_layer, target_layer))
            src_unit, dst_unit = unit_of(module), unit_of(target)
            if src_unit and dst_unit and src_unit != dst_unit:
                edges.setdefault(src_unit, set()).add(dst_unit)
    return Report(modules, count, upward, unmapped, _cycles(edges))


def module_cycles(root: Path) -> list[list[str]]:
    """Import cycles between modules of ``root/agentrl`` (each sorted), wherever the imports sit.

    ``from a.b import c`` is an edge to the module ``a.b.c`` when there is one, else to ``a.b``. A package's
    ``__init__`` is left out on both sides: it re-exports its own submodules, which is not a cycle of logic.
    """
    paths = {module_name(path, root): path for path in sorted((root / PACKAGE).rglob("*.py"))}
    packages = {module for module, path in paths.items() if path.name == "__init__.py"}
    edges: dict[str, set[str]] = {}
    for module, path in paths.items():
        if module in packages:
            continue
        for _, target in imports_of(path.read_text(encoding="utf-8"), module, False):
            name = target if target in paths else target.rsplit(".", 1)[0]
            if name in paths and name not in packages and name != module:
                edges.setdefault(module, set()).add(name)
    return _cycles(edges)


#: Module cycles kept on purpose, each with its reason.
ALLOWED_MODULE_CYCLES = {
    # grader.py is the entry point of a child interpreter (python -m agentrl.envs.tirmath.grader) whose loop
    # imports verify.answers_equal there; verify.py starts that child through grader.GraderProcess.
    ("agentrl.envs.tirmath.grader", "agentrl.envs.tirmath.verify"),
}


@pytest.fixture(scope="module")
def report() -> Report:
    return check_layers(ROOT)


def test_the_checker_reads_the_whole_package(report):
    assert len(report.modules) > 100
    assert f"{PACKAGE}.core.env" in report.modules and f"{PACKAGE}.cli" in report.modules
    assert report.imports > 500  # not vacuous: it saw the imports


def test_every_module_has_a_layer(report):
    assert not report.unmapped, (
        "modules in no layer (add their top-level package to LAYERS here and in docs/design/layers.md):\n"
        + "\n".join(report.unmapped)
    )


def test_no_upward_imports(report):
    lines = "\n".join(str(u) for u in report.upward)
    assert not report.upward, f"{len(report.upward)} upward imports (a module imports its own layer or below):\n{lines}"


def test_no_import_cycles_between_top_level_packages(report):
    assert not report.cycles, "import cycles between top-level packages: " + "; ".join(
        " <-> ".join(c) for c in report.cycles
    )


def benchmark_imports(root: Path) -> list[tuple[str, int, str]]:
    """Every ``(module, line, what)`` by which a module under ``root/agentrl`` reaches the ``benchmarks/`` scripts.

    ``benchmarks/`` (the project's own speed scripts, ``python benchmarks/X.py``) is not in the wheel, so the
    package may not depend on it: no import of ``benchmarks`` or ``benchmarks.X`` (at the top, in a function,
    through ``import_module``), none in a doctest example, and no ``"benchmarks.X:Name"`` entry point string.
    Mentions of the command (``python benchmarks/X.py``) are fine.
    """
    parser = doctest.DocTestParser()
    found: list[tuple[str, int, str]] = []
    for path in sorted((root / PACKAGE).rglob("*.py")):
        module, is_package = module_name(path, root), path.name == "__init__.py"
        source = path.read_text(encoding="utf-8")
        for line, target in imports_of(source, module, is_package):
            if target.split(".")[0] == "benchmarks":
                found.append((module, line, target))
        for node in ast.walk(ast.parse(source)):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            if BENCHMARKS_NAME.fullmatch(node.value) and (module, node.lineno, node.value) not in found:
                found.append((module, node.lineno, node.value))  # an entry point (an import_module name is in)
            if ">>>" not in node.value:
                continue
            for example in parser.get_examples(node.value):
                try:
                    lines = imports_of(example.source, module, is_package)
                except SyntaxError:
                    continue
                found.extend((module, node.lineno + example.lineno, f"doctest: {target}")
                             for _, target in lines if target.split(".")[0] == "benchmarks")
    return found


#: a string naming a ``benchmarks`` module or object the way an entry point or import path does
BENCHMARKS_NAME = re.compile(r"benchmarks(\.\w+)*(:[\w.]+)?")


def test_no_module_of_the_package_imports_the_benchmark_scripts():
    found = benchmark_imports(ROOT)
    assert not found, (
        "the package reaches into benchmarks/ (not in the wheel; move what both need into "
        "agentrl/rollout/workloads.py):\n" + "\n".join(f"{m} line {line}: {what}" for m, line, what in found)
    )


def test_no_import_cycles_between_modules():
    cycles = [c for c in module_cycles(ROOT) if tuple(c) not in ALLOWED_MODULE_CYCLES]
    assert not cycles, "import cycles between modules (move what both need into a module below them): " + "; ".join(
        " <-> ".join(c) for c in cycles
    )


# -- the checker itself ----------------------------------------------------------------------------
def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_layer_mapping():
    assert layer_of("agentrl.core.env") == "core"
    assert layer_of("agentrl.llm.smollm2") == "llm"
    assert layer_of("agentrl.llm") == "llm"
    assert layer_of("agentrl.agents.react") == "agents"
    assert layer_of("agentrl.cli") == layer_of("agentrl.integrations.sb3") == layer_of("agentrl.testing") == "face"
    assert layer_of("agentrl") is None and layer_of("numpy.linalg") is None
    assert layer_of("agentrl.newthing.x") == "?"
    assert RANK["wrappers"] == RANK["agents"] < RANK["rollout"]


def test_checker_catches_planted_upward_imports_and_cycles(tmp_path):
    root = _tree(
        tmp_path,
        {
            "agentrl/__init__.py": "from agentrl import envs\n",  # the root package is in no layer
            "agentrl/core/__init__.py": "",
            "agentrl/core/fine.py": "import json\nfrom agentrl.core import errors\n",
            "agentrl/core/lazy.py": """\
                def f():
                    from agentrl.bench.stats import wilson_interval
                    return wilson_interval
            """,
            "agentrl/core/relative.py": "from .. import cli\nfrom ..llm import base\n",
            "agentrl/envs/__init__.py": "",
            "agentrl/envs/x.py": "import os\n\nimport agentrl.train.common\n",
            "agentrl/envs/dyn.py": 'import importlib\nm = importlib.import_module(f"agentrl.rollout.{1}")\n',
            "agentrl/envs/ok.py": "from agentrl.llm.registry import make_backend\n",
            "agentrl/agents/__init__.py": "from agentrl.llm import base\n",
            "agentrl/agents/a.py": "from agentrl.wrappers.w import W\n",
            "agentrl/llm/__init__.py": "",
            "agentrl/llm/base.py": "from agentrl.agents import registry\n",
            "agentrl/wrappers/__init__.py": "",
            "agentrl/wrappers/w.py": "from agentrl.agents.a import A\n",
            "agentrl/cli.py": "from agentrl.bench import runner\n",
            "agentrl/newpkg/__init__.py": "",
        },
    )
    report = check_layers(root)
    found = {(u.module, u.line, u.target) for u in report.upward}
    assert found == {
        ("agentrl.core.lazy", 2, "agentrl.bench.stats.wilson_interval"),
        ("agentrl.core.relative", 1, "agentrl.cli"),
        ("agentrl.core.relative", 2, "agentrl.llm.base"),
        ("agentrl.envs.x", 3, "agentrl.train.common"),
        ("agentrl.envs.dyn", 2, "agentrl.rollout"),
        ("agentrl.llm.base", 1, "agentrl.agents.registry"),
    }
    assert "agentrl.core.relative (core) line 1 imports agentrl.cli (face)" in {str(u) for u in report.upward}
    assert report.unmapped == ["agentrl.newpkg"]
    # wrappers and agents are one layer (no upward import) but may not import each other both ways;
    # llm -> agents (upward) and agents -> llm is a cycle too
    assert report.cycles == [["agents", "llm", "wrappers"]]


def test_module_cycle_check_catches_a_planted_cycle(tmp_path):
    root = _tree(
        tmp_path,
        {
            "agentrl/__init__.py": "",
            "agentrl/envs/__init__.py": "from agentrl.envs import a, b\n",  # a package's re-exports: no cycle
            "agentrl/envs/a.py": "from agentrl.envs.b import helper\nfrom agentrl.envs import c\n",
            "agentrl/envs/b.py": "def helper():\n    from agentrl.envs.a import thing\n    return thing\n",
            "agentrl/envs/c.py": "import agentrl.envs\n",
        },
    )
    assert module_cycles(root) == [["agentrl.envs.a", "agentrl.envs.b"]]


def test_benchmark_check_catches_planted_imports_doctests_and_entry_points(tmp_path):
    root = _tree(
        tmp_path,
        {
            "agentrl/__init__.py": "",
            "agentrl/rollout/__init__.py": "import benchmarks.sandbox\n",
            "agentrl/rollout/a.py": """\
                def f():
                    from benchmarks import rollout
                    return rollout
            """,
            "agentrl/rollout/b.py": 'import importlib\nm = importlib.import_module("benchmarks.sql")\n',
            "agentrl/rollout/c.py": '''\
                def g():
                    """Example.

                    >>> from benchmarks.concurrency import measure
                    """
            ''',
            "agentrl/rollout/d.py": 'ENTRY = "benchmarks.concurrency:InstantEnv"\n',
            "agentrl/rollout/fine.py": '''\
                """Run ``python benchmarks/rollout.py``; see the benchmarks folder.

                >>> import benchmarks_elsewhere
                """
                import agentrl.rollout.workloads
                NAME = "benchmarks of speed"
            ''',
        },
    )
    assert benchmark_imports(root) == [
        ("agentrl.rollout", 1, "benchmarks.sandbox"),
        ("agentrl.rollout.a", 2, "benchmarks.rollout"),
        ("agentrl.rollout.b", 2, "benchmarks.sql"),
        ("agentrl.rollout.c", 4, "doctest: benchmarks.concurrency.measure"),
        ("agentrl.rollout.d", 1, "benchmarks.concurrency:InstantEnv"),
    ]


def test_relative_imports_resolve_like_python():
    assert _resolve_relative("agentrl.envs.sql.env", False, 1, "verify") == "agentrl.envs.sql.verify"
    assert _resolve_relative("agentrl.envs.sql", True, 1, "env") == "agentrl.envs.sql.env"
    assert _resolve_relative("agentrl.envs.sql.env", False, 3, "core") == "agentrl.core"
    assert _resolve_relative("agentrl.envs.sql", True, 2, None) == "agentrl.envs"


def test_the_layers_page_lists_every_layer_and_every_package():
    """docs/design/layers.md's layer line is LAYERS, and its layout names every top-level package of agentrl."""
    page = (ROOT / "docs" / "design" / "layers.md").read_text()
    line = next(row for row in page.splitlines() if row.startswith("core <"))
    ranks = [part.strip() for part in line.split("<")]
    named = [tuple(name.strip() for name in rank.replace("=", ",").split(",")) for rank in ranks]
    assert [names for names in named[:-1]] == list(LAYERS[:-1]), line  # the face is named by its modules
    assert set(named[-1]) >= {"cli", "integrations", "testing", "demo"}, line
    packages = sorted(
        path.name for path in (ROOT / PACKAGE).iterdir() if path.is_dir() and (path / "__init__.py").exists()
    )
    missing = [name for name in packages if f"agentrl/{name}/" not in page]
    assert not missing, f"docs/design/layers.md does not place these packages: {missing}"
