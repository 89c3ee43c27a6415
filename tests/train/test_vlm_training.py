"""GRPO and PPO train a VLM on pixels: a learning test on a toy pixel env, and the CLI on the games and the desktop.

That a tiny random VLM learns ``AgentRL/ColourLetter-v0`` (the letter to write is shown by a colour only) is
checked once, on the pixel guide's own line (60 steps), by ``tests/artifacts/test_readme_training.py``, which
runs every training line of the guides as written; here, a game without text actions is refused before any
episode.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tests import warm_python

pytest.importorskip("torch", reason="torch is not installed (pip install 'agentrl-gym[train]')")
pytest.importorskip("transformers", reason="transformers is not installed (pip install 'agentrl-gym[train]')")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


pytestmark = pytest.mark.timeout(600)


def test_cli_refuses_a_game_without_text_actions_before_any_episode(tmp_path: Path) -> None:
    """Forgetting ``--env-kwarg action_mode=text`` on a game stops at once, naming that flag (not after 16 rollouts)."""
    if shutil.which("chromium") is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    out = tmp_path / "run"
    command = [sys.executable, "-m", "agentrl.cli", "train", "grpo", "--env", "AgentRL/FlashGame-Catch-v0"]
    command += ["--model", "tiny-vlm", "--output-dir", str(out)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = warm_python.run(command, timeout=300, cwd=tmp_path, env=env)
    assert done.returncode != 0
    assert "Discrete(3), not text" in done.stderr and "--env-kwarg action_mode=text" in done.stderr, done.stderr[-2000:]
    assert not (out / "metrics.jsonl").exists() or not (out / "metrics.jsonl").read_text().strip()  # no step ran
