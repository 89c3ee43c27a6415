"""GRPO and PPO train a VLM on pixels: a learning test on a toy pixel env, and the CLI on the games and the desktop.

The learning test is the pixel twin of the text one (``tests/train/test_train.py``): a tiny random VLM on
``AgentRL/ColourLetter-v0`` (the letter to write is shown by a colour only) starts near 0 and its mean
reward clearly rises. The README's CLI lines on the games and the desktop run as written, at their
defaults, in ``tests/artifacts/test_readme_training.py``; here, a game without text actions is refused before
any episode.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install 'agentrl-gym[train]')")
pytest.importorskip("transformers", reason="transformers is not installed (pip install 'agentrl-gym[train]')")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from agentrl.envs.toy import ColourLetterEnv
from agentrl.train.grpo import GRPOArgs, GRPOTrainer

pytestmark = pytest.mark.timeout(600)


def test_grpo_learns_from_pixels(tmp_path: Path) -> None:
    args = GRPOArgs(
        env_fn=ColourLetterEnv,
        model="tiny-vlm",
        output_dir=str(tmp_path / "run"),
        group_size=8,
        prompts_per_step=4,
        max_new_tokens=8,
        learning_rate=3e-3,
        num_envs=32,
        tensorboard=False,
        max_steps=60,
        seed=0,
    )
    with GRPOTrainer(args) as trainer:
        rewards = [trainer.step()["reward/mean"] for _ in range(60)]
    start, end = sum(rewards[:5]) / 5, sum(rewards[-10:]) / 10
    # The random tiny VLM writes the asked letter ~4% of the time; learning takes that several-fold up.
    assert end > start + 0.15 and end > 3 * start, rewards


def test_cli_refuses_a_game_without_text_actions_before_any_episode(tmp_path: Path) -> None:
    """Forgetting ``--env-kwarg action_mode=text`` on a game stops at once, naming that flag (not after 16 rollouts)."""
    if shutil.which("chromium") is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    out = tmp_path / "run"
    command = [sys.executable, "-m", "agentrl.cli", "train", "grpo", "--env", "AgentRL/FlashGame-Catch-v0"]
    command += ["--model", "tiny-vlm", "--output-dir", str(out)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode != 0
    assert "Discrete(3), not text" in done.stderr and "--env-kwarg action_mode=text" in done.stderr, done.stderr[-2000:]
    assert not (out / "metrics.jsonl").exists() or not (out / "metrics.jsonl").read_text().strip()  # no step ran
