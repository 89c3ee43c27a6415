"""Every ```python block of the README runs as written (each in a fresh interpreter)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
# A block ends at a line that is only ``` (a fence inside a string, as in the first example, does not end it).
BLOCKS = re.findall(r"^```python\n(.*?)^```$", README, re.S | re.M)


def _title(index: int) -> str:
    start = README.index(BLOCKS[index])
    heading = [line for line in README[:start].splitlines() if line.startswith("#")][-1]
    return f"{index}-" + re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")[:40]


def test_the_readme_has_snippets() -> None:
    assert len(BLOCKS) >= 6


@pytest.mark.timeout(300)
@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=[_title(i) for i in range(len(BLOCKS))])
def test_readme_snippet_runs(index: int) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", BLOCKS[index]], capture_output=True, text=True, timeout=280, cwd=ROOT, env=env
    )
    assert done.returncode == 0, f"README block {index} failed:\n{BLOCKS[index]}\n{done.stderr[-3000:]}"
