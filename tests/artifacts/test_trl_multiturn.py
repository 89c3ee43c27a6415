"""Our multi-turn GRPO against TRL's GRPOTrainer tool loop (benchmarks/trl_multiturn.py)."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from tests.installed import skip_module_unless_installed
from tests.paths import ROOT as PATHS_ROOT

# torch and transformers train the model; TRL's GRPOTrainer takes a datasets.Dataset
skip_module_unless_installed("torch", "transformers", "datasets", "trl")

from benchmarks import trl_multiturn  # noqa: E402


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
    path = PATHS_ROOT / "benchmarks" / "results" / "trl_multiturn.json"
    record = json.loads(path.read_text())
    assert record["command"].startswith("python benchmarks/trl_multiturn.py")
    assert record["parity_ok"] is True
    assert record["step_ratio_low"] <= record["step_ratio_ours_over_trl"] <= record["step_ratio_high"]


def test_overlapped_blocks_are_paired_and_never_run_beside_trl(model_dir: Path) -> None:
    blocks, k = 2, 3
    report = trl_multiturn.time_overlapped(blocks, k, warmup=0, model_dir=model_dir, budget=256)
    assert len(report["trl"]) == len(report["ours"]) == blocks  # one figure per block, a pair per block index
    for side in ("trl", "ours"):
        for block in report[side]:
            assert math.isclose(block["step_s"], block["block_s"] / k)
            assert block["step_s"] > 0
    for block in report["trl"]:
        assert len(block["steps_s"]) == k and sum(block["steps_s"]) <= block["block_s"] + 1e-6
    for block in report["ours"]:
        assert len(block["wait_s"]) == len(block["update_s"]) == k
        assert block["prefetched"] == k - 1  # the overlap ran: every step but a block's first had its batch ready
        assert block["staleness"][0] == 0.0  # a block's first batch is collected on-policy, after the last sync
        assert all(0.0 <= s <= 1.0 for s in block["staleness"])  # one step off-policy at most
    # Every TRL step started and ended with no collection of ours in flight and no prefetch pending
    # (_BlockTimer raises otherwise), and nothing had to be discarded to get there.
    assert report["checks"]["idle_checks"] == 2 * blocks * k
    assert report["checks"]["discarded_prefetches"] == 0
    ratio, steady = report["ratio"], report["ratio_steady"]
    assert ratio["low"] <= ratio["ratio"] <= ratio["high"]
    assert steady["low"] <= steady["ratio"] <= steady["high"]  # k=3: step 2 of each block is the steady state
    middle = statistics.median(b["steps_s"][1] for b in report["ours"])
    assert math.isclose(report["median"]["ours"]["steady_step_s"], middle)
    assert report["config"]["overlap_rollouts"] is True
    text = trl_multiturn.format_report(None, None, report)
    assert "overlapped" in text and "staleness" in text
    summary = trl_multiturn._summary(None, None, report)
    assert summary["overlap_step_ratio_low"] <= summary["overlap_step_ratio_ours_over_trl"]
    assert summary["overlap_block_steps"] == k
    json.dumps(report)


def test_the_block_guard_sees_a_background_collection() -> None:
    import concurrent.futures
    import threading
    from types import SimpleNamespace

    started, release = threading.Event(), threading.Event()

    def collect(requests: list, step: int | None = None) -> list:
        started.set()
        release.wait(10)
        return list(requests)

    ours = SimpleNamespace(run=SimpleNamespace(collect=collect, _pending=None))
    tracker = trl_multiturn._CollectionTracker(ours)
    assert not tracker.busy()
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="agentrl-collect") as pool:
        ours.run._pending = (1, pool.submit(ours.run.collect, [1, 2], 1))  # as PolicyRun.prefetch does
        assert started.wait(10)
        assert tracker.busy() and tracker.in_flight == 1 and tracker.background == 1
        timer = SimpleNamespace(tracker=tracker, idle_checks=0)
        with pytest.raises(RuntimeError, match="not fair"):
            trl_multiturn._BlockTimer._assert_idle(timer, "step start")  # type: ignore[arg-type]
        release.set()
        assert tracker.drain()[0] == 1  # waited for and discarded
    assert not tracker.busy() and tracker.in_flight == 0
    trl_multiturn._BlockTimer._assert_idle(timer, "step start")  # type: ignore[arg-type]
    assert timer.idle_checks == 1
