"""GRPO and PPO train a VLM on pixels: a learning test on a toy pixel env, and the CLI on the games and the desktop.

The learning test is the pixel twin of the text one (``tests/test_train.py``): a tiny random VLM on
``AgentRL/ColourLetter-v0`` (the letter to write is shown by a colour only) starts near 0 and its mean
reward clearly rises. The CLI runs are the issue's acceptance commands, 2 steps each on the tiny VLM:
``agentrl train grpo|ppo --env AgentRL/FlashGame-Catch-v0 --model tiny-vlm`` (Chromium) and
``agentrl train grpo --env AgentRL/OSWorld-v0 --model tiny-vlm`` (the desktop).
"""

from __future__ import annotations

import json
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


def run_cli(tmp_path: Path, *argv: str, max_failed: float = 0.0) -> list[dict[str, float]]:
    out = tmp_path / "run"
    command = [sys.executable, "-m", "agentrl.cli", "train", *argv, "--model", "tiny-vlm", "--output-dir", str(out)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=540, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2]
    for row in rows:
        assert row["rollout/failed"] <= max_failed and row["update/tokens"] > 0, row.get("rollout/first_failure")
        assert row["update/logprob_mismatch"] < 1e-4  # the trainer's logprobs, pixels in, equal the sampler's
    return rows


@pytest.mark.browser
@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
def test_cli_trains_a_vlm_on_a_flash_game(tmp_path: Path, algorithm: str) -> None:
    if shutil.which("chromium") is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    sizes = ["--group-size", "2", "--prompts-per-step", "2"] if algorithm == "grpo" else ["--episodes-per-step", "4"]
    run_cli(
        tmp_path,
        algorithm,
        "--env",
        "AgentRL/FlashGame-Catch-v0",
        "--env-kwarg",
        "action_mode=text",
        "--max-steps",
        "2",
        "--num-envs",
        "4",
        "--max-new-tokens",
        "6",
        "--max-turns",
        "3",
        *sizes,
    )


@pytest.mark.desktop
@pytest.mark.parametrize("algorithm", ["grpo", "ppo"])
def test_cli_trains_a_vlm_on_the_desktop(tmp_path: Path, algorithm: str) -> None:
    if shutil.which("Xvfb") is None or shutil.which("xterm") is None:
        pytest.skip("needs Xvfb and xterm (apt-get install xvfb xterm)")
    pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
    # GRPO as the README runs it, with a screenshot window of 3; PPO trains one sequence per episode
    # (it refuses windows), so its episodes stay within one context.
    sizes = (
        ["--group-size", "2", "--prompts-per-step", "1", "--max-images", "3"]
        if algorithm == "grpo"
        else ["--episodes-per-step", "2"]
    )
    run_cli(
        tmp_path,
        algorithm,
        "--env",
        "AgentRL/OSWorld-v0",
        "--max-steps",
        "2",
        "--num-envs",
        "1",
        "--max-new-tokens",
        "8",
        "--max-turns",
        "4",
        *sizes,
        max_failed=1.0,  # a shipped task's app that fails to start costs that one trajectory, not the step
    )


@pytest.mark.browser
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
