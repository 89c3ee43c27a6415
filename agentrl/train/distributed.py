r"""Multi-process data parallelism for the trainers through ``torch.distributed``.

Launch one process per device with ``torchrun``, which sets ``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT`` for each process::

    torchrun --nproc_per_node 4 -m agentrl.cli train grpo --env AgentRL/TIRMath-v0 --model smollm2 \
        --device cuda --dtype bfloat16 --prompts-per-step 16 --loss-type dapo

Each rank collects its own share of the step's groups with its own rollout engine
(:func:`shard` splits the list of task seeds, so a GRPO group never straddles two ranks and its
baseline stays exact), computes the loss on its own rows, and
:class:`~torch.nn.parallel.DistributedDataParallel` all-reduces the gradients.

Normalisation. :func:`agentrl.train.losses.policy_loss` divides by the batch's masked tokens
(``dapo``, ``dcpo``) or rows (``grpo``, ``gspo``, ``dr_grpo``). With the batch split over ranks
those counts must be the *global* ones (:func:`global_counts`, an all-reduced sum), or each rank
would weigh its tokens by its own share and the result would depend on how the rows fell. And DDP
*averages* gradients over ranks, i.e. divides their sum by ``world_size``; each rank's loss is
therefore multiplied by :func:`loss_scale` (``world_size``) first. With ``L_r`` the sum of rank
``r``'s per-token (or per-row) terms and ``N`` the global count::

    DDP gradient = (1 / W) * sum_r grad(W * L_r / N) = grad(sum_r L_r / N)

which is exactly the single-process gradient on the union of the rows. (With the defaults of
``policy_loss`` the counts would be local and the scale 1, which is only right when every rank
happens to hold the same number of tokens or rows.)

Two rules keep the ranks in lockstep, since every backward through a DDP model is a collective:
every rank runs the same number of backward passes per optimizer step (a rank without rows
backs a zero loss that touches every parameter), and gradient-free forwards (old or reference
logprobs) go through the unwrapped model (``model.module``).

Example:
    >>> ctx = DistributedContext(rank=1, world_size=3, local_rank=1, backend="gloo")
    >>> shard(list(range(8)), ctx), ctx.is_main, ctx.enabled, loss_scale(ctx)
    ([3, 4, 5], False, True, 3.0)
    >>> single = DistributedContext(rank=0, world_size=1, local_rank=0, backend=None)
    >>> global_counts(12.0, 3.0, single), all_reduce_mean_dict({"loss": 0.5}, single)
    ((12.0, 3.0), {'loss': 0.5})
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import torch

__all__ = [
    "DistributedContext",
    "all_reduce_mean_dict",
    "all_reduce_sum",
    "barrier",
    "destroy",
    "global_counts",
    "init_distributed",
    "loss_scale",
    "rank_device",
    "shard",
    "wrap_model",
]

T = TypeVar("T")


@dataclass(frozen=True)
class DistributedContext:
    """Where this process stands in a (possibly single-process) data-parallel run.

    Attributes:
        rank: this process's global rank (0 .. world_size - 1).
        world_size: the number of processes (1: not distributed).
        local_rank: the rank on this machine (selects the CUDA device).
        backend: ``"nccl"`` or ``"gloo"`` when a process group is in use, else ``None``.
    """

    rank: int
    world_size: int
    local_rank: int
    backend: str | None

    @property
    def is_main(self) -> bool:
        """Whether this is rank 0, the one that logs, plots and checkpoints."""
        return self.rank == 0

    @property
    def enabled(self) -> bool:
        """Whether more than one process takes part (collectives are real, not identities)."""
        return self.world_size > 1


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.strip() else default


def init_distributed(device: str, *, timeout: timedelta | None = None) -> DistributedContext:
    """Join the process group that ``torchrun`` describes in the environment, or run alone.

    Reads ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK`` (defaults 0, 1, 0). With ``WORLD_SIZE > 1``
    and no process group yet, initialises one from the environment (``MASTER_ADDR``,
    ``MASTER_PORT``) with backend ``nccl`` for a CUDA ``device`` (after selecting CUDA device
    ``local_rank``) and ``gloo`` otherwise; an existing group is reused as is.

    Args:
        device: the trainer's device (``cpu``, ``cuda``, ``cuda:N`` or ``auto``).
        timeout: how long collectives wait for the other ranks (``None``: torch's default).

    Returns:
        The :class:`DistributedContext`; with ``WORLD_SIZE`` 1 it is disabled and no group exists.
    """
    rank = _env_int("RANK", 0)
    world_size = _env_int("WORLD_SIZE", 1)
    local_rank = _env_int("LOCAL_RANK", 0)
    if world_size <= 1:
        return DistributedContext(rank=0, world_size=1, local_rank=0, backend=None)

    import torch
    import torch.distributed as dist

    if not dist.is_available():
        raise RuntimeError("WORLD_SIZE > 1 but this torch build has no torch.distributed")
    if dist.is_initialized():
        return DistributedContext(
            rank=dist.get_rank(),
            world_size=dist.get_world_size(),
            local_rank=local_rank,
            backend=str(dist.get_backend()),
        )
    use_cuda = device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())
    backend = "nccl" if use_cuda else "gloo"
    if use_cuda:
        torch.cuda.set_device(local_rank)
    kwargs: dict[str, Any] = {"backend": backend, "rank": rank, "world_size": world_size}
    if timeout is not None:
        kwargs["timeout"] = timeout
    dist.init_process_group(**kwargs)
    return DistributedContext(rank=rank, world_size=world_size, local_rank=local_rank, backend=backend)


def rank_device(device: str, ctx: DistributedContext) -> str:
    """The device of this rank: ``cuda`` becomes ``cuda:<local_rank>`` in a distributed CUDA run.

    Example:
        >>> rank_device("cuda", DistributedContext(rank=3, world_size=4, local_rank=1, backend="nccl"))
        'cuda:1'
        >>> rank_device("cpu", DistributedContext(rank=3, world_size=4, local_rank=1, backend="gloo"))
        'cpu'
    """
    if ctx.enabled and device in ("cuda", "auto") and ctx.backend == "nccl":
        return f"cuda:{ctx.local_rank}"
    return device


def wrap_model(model: Any, ctx: DistributedContext) -> Any:
    """``model`` in :class:`~torch.nn.parallel.DistributedDataParallel` when distributed, else as is.

    DDP broadcasts rank 0's parameters at construction, so every rank starts from the same
    weights. Module buffers (the policy's are constants such as rotary frequencies) are not
    re-broadcast at each forward, so ranks may run different numbers of gradient-free forwards.
    The wrapped model keeps the original as ``.module``
    (:func:`agentrl.train.models.policy_state_dict` unwraps it).
    """
    if not ctx.enabled:
        return model
    import torch
    from torch.nn.parallel import DistributedDataParallel

    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    device_ids = [device.index if device.index is not None else ctx.local_rank] if device.type == "cuda" else None
    return DistributedDataParallel(model, device_ids=device_ids, broadcast_buffers=False)


def shard(items: Sequence[T], ctx: DistributedContext) -> list[T]:
    """The contiguous share of ``items`` that this rank takes; together the ranks cover each item once, in order.

    Shares differ in size by at most one (the first ``len(items) % world_size`` ranks take one
    more). Shard the step's task seeds, not the expanded requests, so that each GRPO group (the
    ``group_size`` episodes of one task) stays on one rank.

    Example:
        >>> [shard("abcdefg", DistributedContext(r, 3, r, "gloo")) for r in range(3)]
        [['a', 'b', 'c'], ['d', 'e'], ['f', 'g']]
    """
    items = list(items)
    if not ctx.enabled:
        return items
    base, extra = divmod(len(items), ctx.world_size)
    start = ctx.rank * base + min(ctx.rank, extra)
    stop = start + base + (1 if ctx.rank < extra else 0)
    return items[start:stop]


def _collective_device(ctx: DistributedContext) -> torch.device:
    import torch

    if ctx.backend == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def all_reduce_sum(value: float | torch.Tensor, ctx: DistributedContext) -> float:
    """The sum of a scalar over all ranks, as a float (the scalar itself when not distributed)."""
    import torch

    if not ctx.enabled:
        return float(value)
    import torch.distributed as dist

    tensor = torch.as_tensor(value, dtype=torch.float64).detach().reshape(()).clone()
    tensor = tensor.to(_collective_device(ctx))
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return float(tensor.item())


def all_reduce_mean_dict(metrics: dict[str, float], ctx: DistributedContext) -> dict[str, float]:
    """Each metric averaged over the ranks that report it (a copy of ``metrics`` when not distributed).

    The dictionaries are gathered as objects, so ranks may report different keys (a rank whose
    episodes all failed has no reward metrics); a key's mean is over the ranks that have it, and
    the result holds every key any rank reported, in the order of first appearance. Values must
    be numbers. Every rank must call this at the same point.
    """
    if not ctx.enabled:
        return dict(metrics)
    import torch.distributed as dist

    gathered: list[dict[str, float] | None] = [None] * ctx.world_size
    dist.all_gather_object(gathered, {k: float(v) for k, v in metrics.items()})
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for part in gathered:
        for key, value in (part or {}).items():
            sums[key] = sums.get(key, 0.0) + value
            counts[key] = counts.get(key, 0) + 1
    return {key: sums[key] / counts[key] for key in sums}


def global_counts(num_tokens: float, num_rows: float, ctx: DistributedContext) -> tuple[float, float]:
    """The loss normalisers of the whole step: this rank's token and row counts summed over ranks.

    Pass them as ``policy_loss(..., num_tokens=, num_rows=)`` on every rank (one all-reduce).
    """
    if not ctx.enabled:
        return float(num_tokens), float(num_rows)
    import torch
    import torch.distributed as dist

    tensor = torch.tensor([float(num_tokens), float(num_rows)], dtype=torch.float64, device=_collective_device(ctx))
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    tokens, rows = tensor.tolist()
    return float(tokens), float(rows)


def all_reduce_max(value: int, ctx: DistributedContext) -> int:
    """The largest of every rank's ``value`` (``value`` itself when not distributed)."""
    if not ctx.enabled:
        return int(value)
    import torch
    import torch.distributed as dist

    tensor = torch.tensor([int(value)], dtype=torch.int64, device=_collective_device(ctx))
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return int(tensor.item())


def loss_scale(ctx: DistributedContext) -> float:
    """The factor each rank's loss is multiplied by before ``backward``: ``world_size``.

    DDP averages gradients over ranks (sum / world_size). The loss is already normalised by the
    global counts (:func:`global_counts`), so the per-rank gradients must be *summed* to give the
    single-process gradient; multiplying by ``world_size`` undoes DDP's division. (Divide logged
    loss values by it again, or log the unscaled loss.)
    """
    return float(ctx.world_size)


def barrier(ctx: DistributedContext) -> None:
    """Wait for every rank (nothing to wait for when not distributed)."""
    if not ctx.enabled:
        return
    import torch.distributed as dist

    if dist.is_initialized():
        if ctx.backend == "nccl":
            dist.barrier(device_ids=[ctx.local_rank])
        else:
            dist.barrier()


def destroy(ctx: DistributedContext) -> None:
    """Leave and destroy the process group (a no-op when not distributed or already destroyed)."""
    if not ctx.enabled:
        return
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
