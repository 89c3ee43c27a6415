"""Data parallelism helpers: sharding, the disabled context, and DDP == single process (2-rank gloo)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.paths import ROOT as REPO

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from agentrl.train.distributed import (  # noqa: E402
    DistributedContext,
    all_reduce_mean_dict,
    all_reduce_sum,
    barrier,
    destroy,
    global_counts,
    init_distributed,
    loss_scale,
    rank_device,
    shard,
    wrap_model,
)

pytestmark = pytest.mark.timeout(180)

DIST_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def ctx_of(rank: int, world: int) -> DistributedContext:
    return DistributedContext(rank=rank, world_size=world, local_rank=rank, backend="gloo" if world > 1 else None)


# ---------------------------------------------------------------------------------------- shard


@pytest.mark.parametrize("n", [0, 1, 2, 5, 7, 16, 33])
@pytest.mark.parametrize("world", [1, 2, 3, 4, 8])
def test_shard_covers_each_item_once_in_order_and_balanced(n: int, world: int) -> None:
    items = [f"seed{i}" for i in range(n)]
    parts = [shard(items, ctx_of(r, world)) for r in range(world)]
    assert [x for part in parts for x in part] == items  # contiguous, in order, each once
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1
    assert sizes == sorted(sizes, reverse=True)  # the larger shares come first


def test_shard_keeps_groups_whole_when_sharding_task_seeds() -> None:
    from agentrl.rollout import group_requests

    tasks = list(range(100, 105))
    per_rank = [group_requests(shard(tasks, ctx_of(r, 2)), group_size=3) for r in range(2)]
    seeds = [{req.seed for req in reqs} for reqs in per_rank]
    assert seeds[0].isdisjoint(seeds[1])
    assert sum(len(reqs) for reqs in per_rank) == 15


def test_shard_accepts_any_sequence() -> None:
    assert shard(range(5), ctx_of(1, 2)) == [3, 4]
    assert shard((1, 2, 3), ctx_of(0, 1)) == [1, 2, 3]


# --------------------------------------------------------------------------- disabled context


def test_single_process_context_is_disabled_and_collectives_are_identities(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch.distributed as dist

    for name in DIST_VARS:
        monkeypatch.delenv(name, raising=False)
    ctx = init_distributed("cpu")
    assert ctx == DistributedContext(rank=0, world_size=1, local_rank=0, backend=None)
    assert ctx.is_main and not ctx.enabled
    assert not (dist.is_available() and dist.is_initialized())

    model = torch.nn.Linear(2, 2)
    assert wrap_model(model, ctx) is model
    assert shard([3, 1, 2], ctx) == [3, 1, 2]
    assert all_reduce_sum(2.5, ctx) == 2.5
    assert all_reduce_sum(torch.tensor(4.0), ctx) == 4.0
    metrics = {"loss": 0.25, "reward/mean": 1.0}
    reduced = all_reduce_mean_dict(metrics, ctx)
    assert reduced == metrics and reduced is not metrics
    assert global_counts(17.0, 3, ctx) == (17.0, 3.0)
    assert loss_scale(ctx) == 1.0
    assert rank_device("cuda", ctx) == "cuda"
    barrier(ctx)
    destroy(ctx)


def test_world_size_one_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert not init_distributed("cuda").enabled  # no process group, no CUDA needed


def test_context_properties() -> None:
    ctx = ctx_of(2, 4)
    assert ctx.enabled and not ctx.is_main
    assert loss_scale(ctx) == 4.0
    assert rank_device("cuda", DistributedContext(rank=2, world_size=4, local_rank=0, backend="nccl")) == "cuda:0"
    with pytest.raises(AttributeError):
        ctx.rank = 0  # type: ignore[misc]


# ------------------------------------------------- DDP on 2 gloo ranks == one process on all rows

WORKER = textwrap.dedent(
    """
    import json
    import sys
    from datetime import timedelta
    from pathlib import Path

    import torch

    torch.set_num_threads(1)
    from agentrl.train.models import load_policy_model
    from agentrl.train.distributed import (
        all_reduce_mean_dict, all_reduce_sum, barrier, destroy, global_counts, init_distributed, loss_scale,
        shard, wrap_model,
    )
    from agentrl.train.logprobs import token_logprobs
    from agentrl.train.losses import LossConfig, policy_loss

    model_path, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    ctx = init_distributed("cpu", timeout=timedelta(seconds=60))
    try:
        # The same synthetic batch on every rank; uneven policy lengths so token counts differ.
        gen = torch.Generator().manual_seed(1234)
        B, T = 5, 16
        input_ids = torch.randint(0, 400, (B, T), generator=gen)
        attention = torch.ones(B, T, dtype=torch.long)
        loss_mask = torch.zeros(B, T)
        for b, n in enumerate([8, 3, 6, 1, 5]):
            loss_mask[b, T // 2 : T // 2 + n] = 1.0
        advantages = torch.randn(B, generator=gen)[:, None] * loss_mask
        noise = torch.randn(B, T, generator=gen) * 0.3
        rows = shard(list(range(B)), ctx)  # 3 rows on rank 0, 2 on rank 1

        modes = ["exact", "naive"] if ctx.enabled else ["exact"]
        results = {"rows": rows}
        for loss_type in ("dapo", "grpo"):
            for mode in modes:
                model = load_policy_model(model_path, device="cpu", dtype="float32")
                ddp = wrap_model(model, ctx)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
                ids, att, mask = input_ids[rows], attention[rows], loss_mask[rows]
                with torch.no_grad():  # gradient-free forwards go through the unwrapped model
                    old, _ = token_logprobs(model, ids, att, with_entropy=False)
                    old = (old + noise[rows]) * mask
                logprobs, _ = token_logprobs(ddp, ids, att, with_entropy=False)
                if mode == "exact":
                    tokens, nrows = global_counts(float(mask.sum()), len(rows), ctx)
                    scale = loss_scale(ctx)
                else:  # what a naive port would do: local normalisers, no scale
                    tokens, nrows, scale = None, None, 1.0
                loss, _ = policy_loss(
                    logprobs, old, advantages[rows], mask, LossConfig(loss_type), num_tokens=tokens, num_rows=nrows
                )
                optimizer.zero_grad(set_to_none=True)
                (loss * scale).backward()
                grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
                optimizer.step()
                weights = {n: p.detach().clone() for n, p in model.named_parameters()}
                results[(loss_type, mode)] = {
                    "grads": grads,
                    "weights": weights,
                    "loss_sum": all_reduce_sum(loss.detach(), ctx),
                }
        results["sum"] = all_reduce_sum(torch.tensor(ctx.rank + 1.0), ctx)
        results["mean"] = all_reduce_mean_dict({"a": float(ctx.rank), f"only{ctx.rank}": 1.0}, ctx)
        torch.save(results, out_dir / f"rank{ctx.rank}-of{ctx.world_size}.pt")
        barrier(ctx)
    finally:
        destroy(ctx)
    """
)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def launch(script: Path, model: Path, out: Path, rank: int, world: int, port: int) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in DIST_VARS}
    env.update(
        RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_RANK=str(rank),
        LOCAL_WORLD_SIZE=str(world),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        OMP_NUM_THREADS="1",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p),
    )
    return subprocess.Popen(
        [sys.executable, str(script), str(model), str(out)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


GLOO_UNUSABLE = ("connectFullMesh", "Address family not supported", "Cannot assign requested address")


def test_ddp_two_ranks_match_single_process_on_the_union_of_rows(tmp_path: Path) -> None:
    import torch.distributed as dist

    from agentrl.llm.tiny import build_tiny_model

    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("torch.distributed with the gloo backend is not available in this torch build")
    model = build_tiny_model(tmp_path / "tiny", family="qwen2")
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    port = free_port()
    started = time.perf_counter()
    procs = {
        "reference": launch(script, model, tmp_path, 0, 1, port),
        "rank0": launch(script, model, tmp_path, 0, 2, port),
        "rank1": launch(script, model, tmp_path, 1, 2, port),
    }
    outputs: dict[str, str] = {}
    try:
        for name, proc in procs.items():
            remaining = max(1.0, 150.0 - (time.perf_counter() - started))
            outputs[name], _ = proc.communicate(timeout=remaining)
    except subprocess.TimeoutExpired:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
        pytest.fail(f"worker processes did not finish in time: {outputs}")
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    failed = {name: outputs.get(name, "") for name, proc in procs.items() if proc.returncode != 0}
    if failed:
        if procs["reference"].returncode == 0 and any(
            marker in text for text in failed.values() for marker in GLOO_UNUSABLE
        ):
            pytest.skip(f"a 2-process gloo group cannot run here: {next(iter(failed.values()))[-800:]}")
        pytest.fail(f"workers failed: {failed}")

    ref = torch.load(tmp_path / "rank0-of1.pt", weights_only=False)
    ranks = [torch.load(tmp_path / f"rank{r}-of2.pt", weights_only=False) for r in range(2)]
    assert ref["rows"] == [0, 1, 2, 3, 4]
    assert ranks[0]["rows"] == [0, 1, 2] and ranks[1]["rows"] == [3, 4]
    assert ranks[0]["sum"] == ranks[1]["sum"] == 3.0
    assert ranks[0]["mean"] == ranks[1]["mean"] == {"a": 0.5, "only0": 1.0, "only1": 1.0}

    for loss_type in ("dapo", "grpo"):
        want = ref[(loss_type, "exact")]
        assert want["loss_sum"] != 0.0
        for result in ranks:
            got = result[(loss_type, "exact")]
            # The unscaled per-rank losses add up to the single-process loss.
            assert got["loss_sum"] == pytest.approx(want["loss_sum"], abs=1e-6)
            assert got["grads"].keys() == want["grads"].keys()
            for name, grad in want["grads"].items():
                torch.testing.assert_close(got["grads"][name], grad, atol=1e-6, rtol=1e-5, msg=f"{loss_type} {name}")
                torch.testing.assert_close(got["weights"][name], want["weights"][name], atol=1e-6, rtol=0)
        # The test can tell: local normalisers without the scale give a different gradient.
        naive = ranks[0][(loss_type, "naive")]["grads"]
        gap = max(float((naive[n] - g).abs().max()) for n, g in want["grads"].items())
        assert gap > 1e-4, f"{loss_type}: the naive normalisation should differ (max gap {gap})"
