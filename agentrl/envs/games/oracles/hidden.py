"""The scripted expert of the hidden-object scene: it clicks the targets, lifting covers first.

It reads the privileged state (``state["objects"]`` with each object's id, whether it is a target, the
cover it lies under and whether that cover was lifted; ``state["targets"]``). Targets that carry a clue
(a note about a covered target) come first, as a player who reads the notes would play; then each covered
target: click its cover to lift it, then click the target. So the oracle wins in 6 + (covered targets)
clicks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["SPEC", "oracle"]

SPEC: dict[str, Any] = {
    "name": "hidden",
    "env_name": "HiddenObject",
    "title": "Hidden Object",
    "description": "Find the 6 listed objects in a cluttered scene; notes tell which cup or hat hides some of them.",
    "max_steps": 60,
    "frames_per_step": 1,
    "options": {"clicks": 60, "hidden": 2},
    "reward": "milestones",
}


def oracle(state: dict[str, Any], moves: Sequence[str]) -> str:
    """The next click: a clue-carrying target, else a covered target's cover, else the target."""
    objects = {int(o["id"]): o for o in state["objects"]}
    clue_carriers = {int(k) for k in state.get("clues", {})}
    todo = [objects[int(t)] for t in state["targets"] if not objects[int(t)]["found"]]
    todo.sort(key=lambda o: (int(o["id"]) not in clue_carriers, o["under"] is not None))
    for target in todo:
        under = target["under"]
        if under is not None and not objects[int(under)]["lifted"]:
            return f"click {int(under)}"
        return f"click {int(target['id'])}"
    return moves[0]
