"""The scripted expert of the escape room: it follows each room's generated puzzle chain.

It reads the privileged state (``state["rooms"][state["room"]]``: the roles of the objects, the tools
and the safe code) and plays the chain in order: look at the code holder first (so the code is seen
several steps before the keypad), search the container, use the first tool on the locked object, the
second tool on the surface, click the marked hiding place, open the safe's keypad and type the code,
then use the keycard on the door. An item is selected right before it is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["SPEC", "oracle"]

SPEC: dict[str, Any] = {
    "name": "escape",
    "env_name": "EscapeRoom",
    "title": "Escape Room",
    "description": "Point-and-click escape: remember a code seen once, find and use tools, open the safe, leave.",
    "max_steps": 200,
    "frames_per_step": 1,
    "options": {"difficulty": 2},
    "reward": "milestones",
}


def _use(state: dict[str, Any], item: str, target: str) -> str:
    """Select ``item`` (unless it already is), then click ``target``."""
    return f"click {target}" if state.get("selected") == item else f"select {item}"


def oracle(state: dict[str, Any], moves: Sequence[str]) -> str:
    """The next move of the generated solution."""
    room = state["rooms"][state["room"]]
    flags, roles = room["flags"], room["roles"]
    keypad = state.get("keypad")
    if keypad is not None:
        entered = str(keypad["entered"])
        code = str(room["code"])
        if code.startswith(entered) and len(entered) < len(code):
            return f"enter {code[len(entered)]}"
        return "back"
    selected = state.get("selected")
    if not flags["codeSeen"]:
        return "back" if selected else f"click {roles['code']}"
    if not flags["tookFirst"]:
        return "back" if selected else f"click {roles['container']}"
    if not flags["gotSecond"]:
        return _use(state, room["first"], roles["locked"])
    if not flags["clue"]:
        return _use(state, room["second"], roles["surface"])
    if not flags["safeShown"]:
        return "back" if selected else f"click {roles['hider']}"
    if not flags["safeOpen"]:
        return "back" if selected else "click safe"
    return _use(state, "keycard", "door")
