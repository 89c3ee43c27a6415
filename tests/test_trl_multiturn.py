"""Our multi-turn GRPO against TRL's GRPOTrainer tool loop (benchmarks/trl_multiturn.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the comparison trains a torch model")
pytest.importorskip("transformers", reason="the comparison loads a transformers model")
pytest.importorskip("datasets", reason="TRL's GRPOTrainer takes a datasets.Dataset")
pytest.importorskip("trl", reason="the comparison runs TRL's GRPOTrainer")

from benchmarks import trl_multiturn


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch

    torch.set_num_threads(1)
    return trl_multiturn.build_tool_model(tmp_path_factory.mktemp("tool-model"), steps=30)


@pytest.fixture(scope="module")
def parity(model_dir: Path) -> list[dict]:
    return trl_multiturn.parity_check(["grpo"], model_dir=model_dir)


@pytest.mark.parametrize("case", ["on_policy", "off_policy"])
def test_parity_with_trl_on_a_multi_turn_batch(parity: list[dict], case: str) -> None:
    (row,) = [r for r in parity if r["case"] == case]
    assert row["ok"], row
    assert row["same_token_ids"] and row["same_loss_mask"]  # TRL rebuilt our rows and masks exactly
    assert abs(row["our_loss"] - row["trl_loss"]) <= 1e-5 * max(1.0, abs(row["trl_loss"]))
    assert abs(row["our_grad_norm"] - row["trl_grad_norm"]) <= 1e-5 * max(1.0, row["trl_grad_norm"])
    assert row["max_advantage_diff"] <= 1e-6
    assert row["trl_grad_norm"] > 0.01  # the batch has reward variance, so a real gradient
    if case == "off_policy":
        assert 0.0 < row["clip_frac"] < 1.0


def test_trl_really_ran_several_tool_turns(parity: list[dict]) -> None:
    row = parity[0]
    rows = trl_multiturn.NUM_PROMPTS * trl_multiturn.GROUP_SIZE
    assert row["trl_tool_calls"] == row["our_tool_results"]
    assert row["trl_tool_calls"] > rows  # more than one tool call per episode on average
    assert row["trl_generate_calls"] >= 3  # TRL's loop generated again after tool results, more than once
    assert row["masked_tool_tokens"] > 0  # and kept the tool results out of the loss (tool_mask)


def test_the_tool_and_the_action_format() -> None:
    env_actions = trl_multiturn._action_set()
    call = trl_multiturn._call_text(3) + "<|im_end|>"
    action = env_actions.parse(call)
    assert action.kind == "code" and action.content == "print(3 + 3)"
    assert env_actions.parse("The answer is \\boxed{8}.").kind == "answer"
    assert trl_multiturn.tir_reward([[{"role": "assistant", "content": "\\boxed{8}"}], "\\boxed{9}"], ["8", "8"]) == [
        1.0,
        0.0,
    ]
    tool = trl_multiturn.SandboxPython()
    try:
        assert tool.python("x = 20\nprint(x + 1)") == "21"
        assert tool.python("print(x * 2)") == "40"  # a persistent session within an episode
        tool.reset()
        assert "NameError" in tool.python("print(x)")  # and a fresh one after reset
    finally:
        tool._close()


def test_paired_timings_smoke(model_dir: Path) -> None:
    report = trl_multiturn.time_steps(repeats=1, warmup=0, model_dir=model_dir)
    for side in ("trl", "ours"):
        for key in ("step_s", "generate_s", "update_s"):
            values = report[side][key]
            assert len(values) == 1 and all(v > 0 and math.isfinite(v) for v in values)
        assert len(report[side]["tool_calls"]) == 1
        assert report["median"][side]["tool_calls"] > 0  # both sides called the tool in the timed step
    for key in ("step_s", "generate_s", "update_s"):
        ratio = report["ratios"][key]
        assert ratio["low"] <= ratio["ratio"] <= ratio["high"]
    text = trl_multiturn.format_report(None, report)
    assert "full step" in text and "tool calls per episode" in text
    summary = trl_multiturn._summary(None, report)
    assert summary["step_ratio_low"] <= summary["step_ratio_ours_over_trl"] <= summary["step_ratio_high"]
    json.dumps(report)


def test_the_recorded_result_names_its_command() -> None:
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "trl_multiturn.json"
    record = json.loads(path.read_text())
    assert record["command"].startswith("python benchmarks/trl_multiturn.py")
    assert record["parity_ok"] is True
    assert record["step_ratio_low"] <= record["step_ratio_ours_over_trl"] <= record["step_ratio_high"]
