"""Exact resumption: seeding a run, the RNG states, and checkpoints saved atomically and loaded back."""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from pathlib import Path
from typing import Any

from agentrl.train._torch import import_torch

__all__ = [
    "latest_checkpoint",
    "load_checkpoint",
    "rng_state",
    "save_checkpoint",
    "seed_everything",
    "set_rng_state",
]


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA)."""
    import numpy as np

    torch = import_torch()
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def rng_state() -> dict[str, Any]:
    """Python, NumPy and torch RNG states (for exact resumption)."""
    import numpy as np

    torch = import_torch()
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore :func:`rng_state`."""
    import numpy as np

    torch = import_torch()
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


def save_checkpoint(run_dir: Path, step: int, state: dict[str, Any], *, keep: int = 2) -> Path:
    """Write ``state`` (tensors, optimizer states, JSON-able values) as ``checkpoints/step-N``, atomically.

    The newest ``keep`` checkpoints are kept. A checkpoint is complete when its folder exists:
    it is written under a temporary name and renamed.
    """
    torch = import_torch()
    root = run_dir / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:08d}"
    tmp = root / f".tmp-step-{step:08d}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    torch.save(state, tmp / "state.pt")
    (tmp / "meta.json").write_text(json.dumps({"step": step, "saved_at": time.time()}))
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    for old in sorted(root.glob("step-*"))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete checkpoint of a run, or ``None``."""
    found = sorted((run_dir / "checkpoints").glob("step-*"))
    return found[-1] if found else None


def load_checkpoint(path: Path) -> dict[str, Any]:
    """The state saved by :func:`save_checkpoint`."""
    torch = import_torch()
    return torch.load(path / "state.pt", weights_only=False)
