"""Every ```python block of the README and the site's hand-written pages runs as written, in a process of its own
(one that starts with torch and transformers imported: ``tests/warm_python.py``).

The hand-written pages are ``docs/**/*.md`` (the guides, the design notes); the generated env pages run their own
snippets while the site builds (``docs/hooks.py``).
"""

from __future__ import annotations

import os
import re
import sys

import pytest

from tests import warm_python
from tests.paths import ROOT

#: the README, then the site's hand-written pages, in a stable order
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
TEXTS = {path: path.read_text() for path in DOC_FILES}
# A block ends at a line that is only ``` (a fence inside a string, as in the first example, does not end it).
FENCED = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)
FOUND = [(path, block) for path, text in TEXTS.items() for block in FENCED.findall(text)]
BLOCKS = [block for _, block in FOUND]


def _title(index: int) -> str:
    path, block = FOUND[index]
    text = TEXTS[path]
    heading = [line for line in text[: text.index(block)].splitlines() if line.startswith("#")][-1]
    return f"{index}-{path.stem}-" + re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")[:40]


def test_the_readme_and_the_guides_have_snippets() -> None:
    assert len(BLOCKS) >= 6
    assert any(path.name == "README.md" for path, _ in FOUND)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=[_title(i) for i in range(len(BLOCKS))])
def test_readme_snippet_runs(index: int) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    done = warm_python.run([sys.executable, "-c", BLOCKS[index]], timeout=280, cwd=ROOT, env=env)
    where = FOUND[index][0].relative_to(ROOT)
    assert done.returncode == 0, f"{where}: block {index} failed:\n{BLOCKS[index]}\n{done.stderr[-3000:]}"
