"""The documentation site: a page per registered id, pictures the envs rendered, a short README, working links.

The site is ``site/``, built by the test run itself (``mkdocs build --strict``, as ``make docs`` builds it): once per
run, by the first test that needs it on any xdist worker, so a failing build fails the suite and no test reads the
pages of an earlier build. The browser check of the built site is in ``tests/artifacts/test_docs_site.py``.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

from tests import warm_python
from tests.paths import ROOT

SITE = ROOT / "site"

pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install 'agentrl-gym[docs]')")


def load_hooks() -> ModuleType:
    """``docs/hooks.py``, the generator MkDocs runs (not a package module: loaded from its path)."""
    spec = importlib.util.spec_from_file_location("agentrl_docs_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def build_site(out: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)]
    return warm_python.run(command, cwd=ROOT, env=env, timeout=900)


#: One id per test run: xdist gives its workers the same one; a plain ``pytest`` is one process.
RUN_ID = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"{os.getpid()}-{time.time_ns()}"
BUILT_BY = SITE / ".built-by-test-run"


def built_site() -> Path:
    """``site/`` as this test run built it: ``mkdocs build --strict`` once, by whichever worker asks first.

    The others wait on the lock, then find the run's id in the stamp. A site an earlier run or ``make docs`` left
    is built again: the tests check the pages of the code they run with.
    """
    lock_path = ROOT / "runs" / "site-build.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (BUILT_BY.exists() and BUILT_BY.read_text() == RUN_ID):
            done = build_site(SITE)
            assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stderr[-4000:]}"
            BUILT_BY.write_text(RUN_ID)
    return SITE


@pytest.fixture(scope="module")
def site() -> Path:
    return built_site()


def test_the_strict_build_passes(site: Path) -> None:
    """``mkdocs build --strict``: a broken link, a missing page or a snippet that fails would have stopped it."""
    assert (site / "index.html").is_file() and (site / "envs" / "index.html").is_file()


def test_every_registered_id_has_a_page(site: Path) -> None:
    from agentrl.core.registry import registered_envs

    ids = [spec.env_id for spec in registered_envs()]
    pages = sorted(str(p.parent.relative_to(site / "envs")) for p in (site / "envs").glob("*/*/index.html"))
    assert sorted(ids) == pages
    index = (site / "envs" / "index.html").read_text()
    assert all(f"{env_id}/" in index for env_id in ids)  # the table links each one


def test_every_id_agentrl_list_prints_is_in_the_registry() -> None:
    from agentrl.core.registry import registered_envs

    done = subprocess.run([sys.executable, "-m", "agentrl.cli", "list"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    listed = set(re.findall(r"^\s+(AgentRL[\w-]*/\S+)", done.stdout, re.M))
    assert listed == {spec.env_id for spec in registered_envs()}


def test_every_multiagent_module_has_a_page(site: Path) -> None:
    from agentrl.envs.multiagent import MULTIAGENT_ENVS

    for name in MULTIAGENT_ENVS:
        assert (site / "multiagent" / name / "index.html").exists(), name


def test_pixel_pages_show_a_picture_the_env_rendered(site: Path) -> None:
    from PIL import Image

    from agentrl.core.registry import registered_envs

    hooks = load_hooks()
    pixel = [spec for spec in registered_envs() if hooks.is_pixel_env(spec)]
    assert len(pixel) >= 12  # the games, the desktop, the VLM toy
    for spec in pixel:
        page = site / "envs" / spec.env_id / "index.html"
        images = re.findall(r'<img alt="[^"]*" src="([^"]+)"', page.read_text())
        assert images, f"{spec.env_id}: no picture on its page"
        for source in images:
            path = (page.parent / source).resolve()
            assert path.is_file(), f"{spec.env_id}: {source} is missing"
            with Image.open(path) as image:
                assert image.width >= 84 and image.height >= 56
                if path.suffix == ".gif":
                    assert getattr(image, "n_frames", 1) >= 2, f"{spec.env_id}: the oracle's GIF has one frame"
        animated = spec.group in ("FlashGame", "OSWorld")
        assert any(s.endswith(".gif") for s in images) == animated, spec.env_id


def test_a_page_that_cannot_get_its_picture_fails_the_build() -> None:
    import numpy as np

    hooks = load_hooks()
    with pytest.raises(hooks.DocsBuildError, match=r"expected an \(H, W, 3\) uint8 image"):
        hooks.pixels_of({"text": "no picture here"})
    with pytest.raises(hooks.DocsBuildError, match="expected an"):
        hooks.pixels_of(np.zeros((8, 8), dtype=np.float32))
    with pytest.raises(hooks.DocsBuildError, match="snippet of AgentRL/Nope-v0 failed"):
        hooks.run_snippet("AgentRL/Nope-v0", hooks.snippet("AgentRL/Nope-v0", pixels=False))


def test_an_env_page_says_what_the_code_says(site: Path) -> None:
    page = (site / "envs" / "AgentRL" / "TIRMath-v0" / "index.html").read_text()
    for text in ("Observation space", "UnicodeText", "Rewards", "Episode End", "Version History", "reset(seed=0)",
                 "done_reason", "agentrl.envs.tirmath.env:TIRMathEnv"):
        assert text in page, text
    deprecated = (site / "envs" / "AgentRL-MA" / "nim-vs-best-v0" / "index.html").read_text()
    assert "Deprecated" in deprecated and "game_turn" in deprecated


def test_the_reproduce_page_reads_every_result_file(site: Path) -> None:
    import json

    page = (site / "reproduce" / "index.html").read_text()
    for path in sorted((ROOT / "benchmarks" / "results").glob("*.json")):
        assert path.name in page
        command = json.loads(path.read_text())["command"]
        assert command.split()[1] in page  # the script the command runs


def test_the_readme_is_short_and_its_links_resolve() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < 300
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert links
    for link in links:
        if not link.startswith(("http://", "https://")):
            assert (ROOT / link).exists(), f"README links to {link}, which is not in the repository"


def test_every_guide_is_in_the_nav() -> None:
    config = (ROOT / "mkdocs.yml").read_text()
    for path in sorted((ROOT / "docs").rglob("*.md")):
        assert str(path.relative_to(ROOT / "docs")) in config, f"{path} is not in mkdocs.yml's nav"


def test_the_pages_of_the_benchmark_envs_and_the_seats_have_the_gymnasium_sections(site: Path) -> None:
    from agentrl.core.registry import registered_envs

    sections = ("Description", "Action Space", "Observation Space", "Rewards", "Episode End", "Arguments",
                "Version History")
    for spec in registered_envs():
        if spec.group == "toy":
            continue  # the trainer's toys: a paragraph each
        page = (site / "envs" / spec.env_id / "index.html").read_text()
        missing = [s for s in sections if f">{s}<" not in page and f">{s}\n" not in page]
        assert missing == [], f"{spec.env_id}: its docstring has no {missing} section"


def test_no_page_shows_a_raw_sphinx_role(site: Path) -> None:
    raw = [str(p.relative_to(site)) for p in site.rglob("*.html")
           if re.search(r":(class|func|meth|data|attr|mod):(<code>|`)", p.read_text())]
    assert raw == []
