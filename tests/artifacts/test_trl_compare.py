"""Our GRPO losses against TRL's GRPOTrainer (benchmarks/trl_compare.py)."""

from __future__ import annotations

import json
import math

import pytest

from tests.installed import skip_module_unless_installed

skip_module_unless_installed("torch", "transformers", "datasets", "trl")

from benchmarks import trl_compare  # noqa: E402


@pytest.fixture(scope="module")
def parity() -> list[dict]:
    return trl_compare.parity_check()


@pytest.mark.parametrize("loss_type", trl_compare.LOSS_TYPES)
@pytest.mark.parametrize("case", ["on_policy", "off_policy"])
def test_parity_with_trl(parity: list[dict], loss_type: str, case: str) -> None:
    (row,) = [r for r in parity if r["loss_type"] == loss_type and r["case"] == case]
    assert row["ok"], row
    assert abs(row["our_loss"] - row["trl_loss"]) <= 1e-5 * max(1.0, abs(row["trl_loss"]))
    assert abs(row["our_grad_norm"] - row["trl_grad_norm"]) <= 1e-5 * max(1.0, row["trl_grad_norm"])
    assert row["max_grad_diff"] <= 1e-5
    assert row["max_advantage_diff"] <= 1e-5
    assert row["max_logprob_diff"] <= 1e-5
    assert row["trl_grad_norm"] > 0.1  # the fixed rollout carries a real gradient
    if case == "off_policy":
        assert 0.0 < row["clip_frac"] < 1.0  # clipping is active on some tokens, not all
    else:
        assert row["clip_frac"] == 0.0


def test_paired_ratio() -> None:
    r = trl_compare.paired_ratio([1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0])
    assert r["ratio"] == pytest.approx(0.5)
    assert r["pair_median"] == pytest.approx(0.5)
    assert r["low"] <= r["ratio"] <= r["high"]
    with pytest.raises(ValueError):
        trl_compare.paired_ratio([1.0], [1.0, 2.0])


def _check_timing(report: dict, repeats: int) -> None:
    for side in ("trl", "ours"):
        for key in ("step_s", "generate_s", "update_s"):
            values = report[side][key]
            assert len(values) == repeats
            assert all(v > 0 and math.isfinite(v) for v in values)
            assert report["median"][side][key] > 0
    for key in ("step_s", "generate_s", "update_s"):
        ratio = report["ratios"][key]
        assert ratio["low"] <= ratio["ratio"] <= ratio["high"]
    json.dumps(report)  # the CLI writes it as JSON


def test_timing_smoke_with_a_stub_for_ours() -> None:
    calls = []

    def our_step() -> dict[str, float]:
        calls.append(1)
        return {"time/generate_s": 0.002, "time/update_s": 0.001, "time/step_s": 0.003}

    report = trl_compare.time_steps(repeats=1, warmup=1, our_step=our_step)
    assert len(calls) == 2  # the warm-up pair and the timed pair
    _check_timing(report, 1)
    assert "step_s" in report["ratios"]
    text = trl_compare.format_report(None, report)
    assert "full step" in text and "generation" in text and "update" in text


def test_timing_smoke_with_our_trainer() -> None:
    pytest.importorskip("agentrl.train.grpo")
    report = trl_compare.time_steps(repeats=1, warmup=0)
    assert report["notes"] == []
    _check_timing(report, 1)


def test_cli(tmp_path, capsys) -> None:
    out = tmp_path / "figures.json"
    code = trl_compare.main(["--skip-timing", "--json", str(out)])
    assert code == 0
    assert "Parity" in capsys.readouterr().out
    assert len(json.loads(out.read_text())["parity"]) == 6
