"""End to end: ``agentrl train grpo|ppo`` under ``torchrun --nproc_per_node 2`` (gloo, CPU).

Each rank collects its share of the step's tasks; rank 0 alone logs and checkpoints. The runs
check that every step is logged once, that the loss normalisers are the global row counts, that
the weights moved, and that a resumed 2-rank run continues where the checkpoint left off.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import warm_python
from tests.paths import ROOT as REPO

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

pytestmark = pytest.mark.timeout(600)

DIST_VARS = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "ROLE_RANK",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RUN_ID",
)
GLOO_UNUSABLE = ("connectFullMesh", "Address family not supported", "Cannot assign requested address")
TIMEOUT_S = 180

# A short run of the toy env. The target letter is "e" (a letter the tiny model's BPE vocabulary
# is full of), so that a random policy's groups already differ in reward and the update is not
# zero; with the default "a" the first steps of a 4-token policy usually all score 0.
COMMON = [
    "--env",
    "AgentRL/Letter-v0",
    "--env-kwarg",
    "target=e",
    "--model",
    "tiny",
    "--max-new-tokens",
    "4",
    "--num-envs",
    "4",
    "--tensorboard",
    "false",
    "--save-every",
    "1",
    "--learning-rate",
    "1e-3",
]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tail(text: str | bytes | None, chars: int = 4000) -> str:
    return (text.decode(errors="replace") if isinstance(text, bytes) else text or "")[-chars:]


def torchrun(algorithm: str, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``python -m torch.distributed.run --nproc_per_node 2 -m agentrl.cli train ALGORITHM ...``; skip if gloo can't."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("torch.distributed with the gloo backend is not available in this torch build")
    env = {k: v for k, v in os.environ.items() if k not in DIST_VARS}
    env.update(
        OMP_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p),
    )
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(free_port()),
        "-m",
        "agentrl.cli",
        "train",
        algorithm,
        *COMMON,
        "--output-dir",
        str(out),
        *extra,
    ]
    try:
        result = warm_python.run(command, cwd=REPO, env=env, timeout=TIMEOUT_S)  # the launcher warm, its ranks not
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"torchrun {algorithm} did not finish in {TIMEOUT_S}s\n"
            f"stdout:\n{tail(exc.stdout)}\nstderr:\n{tail(exc.stderr)}"
        )
    if result.returncode != 0:
        text = result.stdout + result.stderr
        if any(marker in text for marker in GLOO_UNUSABLE):
            pytest.skip(f"a 2-process gloo group cannot run here: {text[-800:]}")
        print(f"--- stdout (tail) ---\n{result.stdout[-4000:]}\n--- stderr (tail) ---\n{result.stderr[-6000:]}")
    assert result.returncode == 0, f"torchrun {algorithm} exited {result.returncode}:\n{result.stderr[-3000:]}"
    return result


def metric_lines(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def checkpoint(run_dir: Path, step: int) -> dict[str, Any]:
    path = run_dir / "checkpoints" / f"step-{step:08d}"
    assert (path / "state.pt").is_file(), (
        f"no checkpoint for step {step}: {sorted((run_dir / 'checkpoints').iterdir())}"
    )
    assert json.loads((path / "meta.json").read_text())["step"] == step
    return torch.load(path / "state.pt", weights_only=False)


def initial_weights(run_dir: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(str(run_dir / "tiny-qwen2" / "model.safetensors"))


def changed_tensors(state: dict[str, Any], initial: dict[str, Any]) -> list[str]:
    common = sorted(set(state) & set(initial))
    assert common, f"no common keys between the checkpoint {sorted(state)[:5]} and the tiny model {sorted(initial)[:5]}"
    return [key for key in common if not torch.equal(state[key].float().cpu(), initial[key].float().cpu())]


def test_grpo_two_ranks_log_once_count_rows_globally_train_and_resume(tmp_path: Path) -> None:
    out = tmp_path / "grpo"
    grpo = ["--max-steps", "2", "--group-size", "2", "--prompts-per-step", "2"]
    first = torchrun("grpo", out, *grpo)
    assert first.stdout.count("grpo: 2 step(s)") == 2, first.stdout  # both ranks ran both steps

    lines = metric_lines(out)
    assert [line["step"] for line in lines] == [1, 2]  # rank 0 alone logs, each step once
    for line in lines:
        # 2 prompts x group of 2 = 4 rows over both ranks (each rank holds 2; grpo: no dynamic sampling).
        assert line["update/rows"] == 4.0, line
        assert line["filter/kept_fraction"] == 1.0, line
        assert line["rollout/failed"] == 0.0, line
        assert "update/skipped" not in line, line
    assert any(line["update/grad_norm"] > 0 for line in lines), f"no reward signal, so no update: {lines}"

    state = checkpoint(out, 2)
    assert state["step"] == 2
    assert not any(key.startswith("module.") for key in state["model"])  # the unwrapped model, not DDP's
    initial = initial_weights(out)
    assert changed_tensors(state["model"], initial), "the step-2 weights equal the initial tiny model's"

    # Resume on 2 ranks: continue from step 2 to 3; the log keeps steps 1 and 2 as they were. Step 3 has one prompt,
    # so rank 1 has no task: it still joins the step's collectives (rank 0's two rows are the step's rows).
    one_prompt = ["--group-size", "2", "--prompts-per-step", "1"]
    second = torchrun("grpo", out, *one_prompt, "--max-steps", "3", "--resume", "true")
    assert second.stdout.count("grpo: 1 step(s)") == 2, second.stdout  # one new step, on both ranks
    resumed = metric_lines(out)
    assert [line["step"] for line in resumed] == [1, 2, 3]
    assert resumed[:2] == lines
    assert resumed[2]["update/rows"] == 2.0
    state3 = checkpoint(out, 3)
    assert state3["step"] == 3
    assert changed_tensors(state3["model"], initial)
    assert (out / "tiny-qwen2").is_dir() and len(list((out / "checkpoints").glob("step-*"))) == 2  # keep=2


def test_ppo_two_ranks_log_once_and_count_rows_globally(tmp_path: Path) -> None:
    out = tmp_path / "ppo"
    result = torchrun("ppo", out, "--max-steps", "2", "--episodes-per-step", "4")
    assert result.stdout.count("ppo: 2 step(s)") == 2, result.stdout

    lines = metric_lines(out)
    assert [line["step"] for line in lines] == [1, 2]
    for line in lines:
        assert line["update/rows"] == 4.0, line  # 4 episodes over both ranks (2 each)
        assert line["rollout/failed"] == 0.0, line
        assert line["update/policy_frozen"] == 0.0, line
        assert "loss/value" in line and "update/skipped" not in line, line

    state = checkpoint(out, 2)
    assert state["step"] == 2
    assert set(state["extra"]) == {"critic", "critic_optimizer"}
    assert not any(key.startswith("module.") for key in state["model"])
    assert changed_tensors(state["model"], initial_weights(out)), "the step-2 weights equal the initial tiny model's"
