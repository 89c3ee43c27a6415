"""The test tiers, derived from where a test lives and what it starts: nobody marks a test by hand.

``make check`` (the edit loop) runs the tests that carry none of ``slow``, ``desktop``, ``docker`` and
``browser``; ``make test`` runs them all, in one pytest run. A test gets:

* ``docker``: the private Docker engine is among its fixtures (``docker_engine``, directly or through another);
* ``desktop``: it, or a fixture it uses, starts an X desktop (a :class:`DesktopSession`, the OSWorld env, a desktop
  jail or container), or it is parametrized with the OSWorld id;
* ``browser``: it, or a fixture it uses, drives Chromium (a game env, a game page, Playwright);
* ``slow``: it lives in ``tests/artifacts/`` (the README, guides, examples, benchmark scripts and the docs
  site, each run in a fresh interpreter), or it, or a fixture it uses, trains a policy, loads the real
  SmolLM2 or starts Ray (10-15 s a start, and every Ray test waits for the one worker that runs them).

"Starts" is read from the source of the test function and of every fixture in its closure, so a fixture that
starts a desktop marks every test that uses it, wherever the test lives. xdist groups (``--dist loadgroup``)
are given only where a module's tests share an expensive fixture: a module-scoped fixture keeps its module on
one worker (so a desktop or a server starts once), every Docker test goes to one worker (one engine), and so
does every test that starts or joins Ray (one Ray per machine); every other test is spread test by test.

:func:`tier_marks` is the rule, :func:`apply` runs it over a collection (``tests/conftest.py`` calls it).
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent

#: what a desktop test starts (in the source of the test or of a fixture it uses), or names in its id
DESKTOP = re.compile(
    r"DesktopSession\(|desktop_session\(|OSWorldEnv\(|AgentRL/OSWorld-v\d|DesktopContainer\(|\bJail\(|"
    r"serve-desktop|start_desktop\("
)
#: what a browser test starts
BROWSER = re.compile(
    r"AgentRL/FlashGame-|BrowserHost|GamePage\(|sync_playwright|async_playwright|BrowserGameEnv|GamePageDriver|"
    r"game_page\(|FLASHGAME_IDS|render_oracle_gif|chromium\.launch"
)
#: what starts or joins Ray: one Ray at a time on this machine (a second ``ray.init`` finds the first one's address
#: in /tmp/ray and joins it), so every such test goes to one worker
RAY = re.compile(r"RayWorkers\(|ray\.init\(|ray_cluster|cluster_utils")
#: what a Docker test needs (beside the ``docker_engine`` fixture itself)
DOCKER = re.compile(r"docker_engine|desktop_docker")
#: the folders whose modules start what their source names (helpers included): a module of ``tests/envs/osworld/``
#: that starts a desktop anywhere in it has every test marked ``desktop``, and the same for the games' browser
MODULE_RULES = {("envs", "osworld"): ("desktop", DESKTOP), ("envs", "games"): ("browser", BROWSER)}
#: what a slow test runs: a training loop or the real SmolLM2 (loaded in about 24 s once, 10 tokens/s after)
SLOW = re.compile(
    r"\btrain_grpo\(|\btrain_ppo\(|\bGRPOTrainer\(|\bPPOTrainer\(|[\"']train[\"'],\s*[\"'](?:grpo|ppo)[\"']|"
    r"smollm2|learn_smollm2|run_grpo\(|run_ppo\(|server_process\(|ray\.init\(|\.train\(\)|run_bench\(|"
    r"main\(\[[\"']train[\"']|\.learn\(|world_size|nproc_per_node|torchrun\(|torch\.distributed|vf_eval|rollout_pixels|fidelity_|"
    r"[\"']--max-steps[\"'],\s*[\"'](?:[3-9]|\d\d)",
    re.IGNORECASE,
)


@functools.cache
def _module_source(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError:
        return ""


@functools.cache
def _source(function: Callable[..., Any]) -> str:
    try:
        return inspect.getsource(function)
    except (OSError, TypeError):
        return ""


def _fixture_functions(item: pytest.Item) -> Iterable[Callable[..., Any]]:
    info = getattr(item, "_fixtureinfo", None)
    for defs in info.name2fixturedefs.values() if info is not None else ():
        for fixturedef in defs:
            yield fixturedef.func


def _module_scoped(item: pytest.Item) -> bool:
    """Whether the item shares a fixture with the rest of its module: one that lives for its module (or class), or a
    session fixture defined in the module itself (SmolLM2's conversion: spread over three workers, it ran three times).

    A session fixture of ``conftest.py`` does not count: the Docker engine has a group of its own.
    """
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    module = getattr(getattr(item, "module", None), "__name__", None)
    for defs in info.name2fixturedefs.values():
        scope = getattr(defs[-1], "scope", "function") if defs else "function"
        if scope in ("module", "class", "package"):
            return True
        if scope == "session" and getattr(defs[-1].func, "__module__", None) == module:
            return True
    return False


def _finds(pattern: re.Pattern[str], item: pytest.Item) -> bool:
    """Whether ``pattern`` occurs in the test's id or in the source of its function or of a fixture in its closure.

    Each source is searched once per pattern (the same fixtures serve thousands of tests): searching every test's
    joined sources took 2.7 s of each xdist worker's collection.
    """
    functions = [getattr(item, "function", None), *_fixture_functions(item)]
    return pattern.search(item.nodeid) is not None or any(_source_has(pattern, f) for f in functions if f is not None)


@functools.cache
def _source_has(pattern: re.Pattern[str], function: Callable[..., Any]) -> bool:
    return pattern.search(_source(function)) is not None


def _params(item: pytest.Item) -> dict[str, Any]:
    return getattr(getattr(item, "callspec", None), "params", {})


def tier_marks(item: pytest.Item) -> set[str]:
    """The tiers of one collected test (see the module docstring)."""
    path = Path(str(item.fspath)).resolve()
    try:
        relative = path.relative_to(TESTS)
    except ValueError:  # a doctest of the package, the benchmarks or the docs: the fast tier
        relative = None
    marks = set()
    params = _params(item)
    if "docker_engine" in getattr(item, "fixturenames", ()) or (
        "docker" in map(str, params.values()) and DOCKER.search(_module_source(str(path)))
    ):
        marks.add("docker")
    if _finds(DESKTOP, item):
        marks.add("desktop")
    if _finds(BROWSER, item):
        marks.add("browser")
    for folder, (mark, pattern) in MODULE_RULES.items():
        in_folder = relative is not None and relative.parts[: len(folder)] == folder
        if in_folder and pattern.search(_module_source(str(path))):
            marks.add(mark)
    if (relative is not None and relative.parts[0] == "artifacts") or _finds(SLOW, item) or _starts_ray(item):
        marks.add("slow")
    return marks


def _starts_ray(item: pytest.Item) -> bool:
    """Whether the test starts or joins Ray: by its source, or by a ``ray`` parameter in a module that starts it."""
    ray_param = "ray" in map(str, _params(item).values())
    return bool(_finds(RAY, item) or (ray_param and RAY.search(_module_source(str(item.fspath)))))


def xdist_group(item: pytest.Item, marks: set[str] | None = None) -> str | None:
    """A test's worker group: ``docker``, ``ray``, its module (a module-scoped fixture), or none (spread freely).

    ``marks``: the test's tiers when the caller has them already (:func:`apply` does).
    """
    if "docker" in (tier_marks(item) if marks is None else marks):  # the fixture, or a "docker" parameter
        return "docker"
    if _starts_ray(item):
        return "ray"
    if _module_scoped(item):
        return item.nodeid.split("::")[0]
    return None


def apply(items: Iterable[pytest.Item]) -> None:
    """Mark every item with its tiers and its xdist group."""
    for item in items:
        marks = tier_marks(item)
        for name in sorted(marks):
            if not item.get_closest_marker(name):
                item.add_marker(getattr(pytest.mark, name))
        group = xdist_group(item, marks)
        if group is not None and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(group))
