"""The real-model learning benchmark's parts: TIRMath's train/test split and the before/after harness.

The benchmark itself (SmolLM2-135M, an hour on 2 cores) is not a test; here its harness runs end to end on
the tiny local model for one step, and the split it rests on is checked: no held-out problem is ever drawn
in training.
"""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

import agentrl  # noqa: F401  (registers the ids)
from agentrl.envs.tirmath.tasks import EASY, ProceduralMathSource, problem_split, split_tasks
from benchmarks import learn_smollm2

pytestmark = pytest.mark.timeout(600)


def test_the_easy_tier_splits_by_problem_text_into_disjoint_sets() -> None:
    test, train = split_tasks("test", EASY), split_tasks("train", EASY)
    assert len(test) == 111 and len(train) == 302  # every one of the 413 distinct easy problems, once
    assert not {t.prompt for t in test} & {t.prompt for t in train}
    assert all(problem_split(t) == "test" for t in test)


def test_a_train_split_env_never_draws_a_held_out_problem() -> None:
    held_out = {t.prompt for t in split_tasks("test", EASY)}
    env = gym.make("AgentRL/TIRMath-v0", difficulty=0, procedural_split="train")
    try:
        for seed in range(150):
            _, info = env.reset(seed=seed)
            assert env.unwrapped.task_source.get(info["task_id"]).prompt not in held_out
    finally:
        env.close()
    # a split is drawn from the generator alone: with a dataset file it is refused, with the fix
    with pytest.raises(ValueError, match="drop procedural_split="):
        gym.make("AgentRL/TIRMath-v0", dataset="x.jsonl", procedural_split="train")
    with pytest.raises(ValueError, match=r"unknown split 'tset'.*did you mean 'test'"):
        ProceduralMathSource(difficulty=0, split="tset")


def test_held_out_requests_are_the_test_split_ids() -> None:
    requests = learn_smollm2.held_out_requests()
    assert len(requests) == 111 and len({r["task_id"] for r in requests}) == 111
    assert learn_smollm2.held_out_requests(limit=5) == requests[:5]


def test_the_harness_evaluates_trains_and_evaluates_again_on_the_tiny_model(tmp_path: Path) -> None:
    config = learn_smollm2.LearnConfig(
        steps=1, group_size=2, prompts_per_step=2, eval_limit=4, max_new_tokens=8, model="tiny", out=str(tmp_path)
    )
    lines: list[str] = []
    results = learn_smollm2.run(config, log=lines.append)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["before"]["n"] == saved["after"]["n"] == 4
    assert [point["step"] for point in saved["curve"]] == [0, 1]
    assert saved["env"]["held_out_split"] == "test" and saved["config"]["steps"] == 1
    assert results["before"]["failed_rollouts"] == 0 and results["after"]["failed_rollouts"] == 0
    assert (tmp_path / "train" / "metrics.jsonl").exists()
    assert "held-out success before: " in learn_smollm2.summary(results)
    assert lines[0].startswith("step 0: held-out success")
