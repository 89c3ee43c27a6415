r"""Reference agents for the browser games (``AgentRL/FlashGame-<Game>-v0``).

:class:`VisionGameAgent` is the reference vision-language agent: each step it sends the screenshot
(a PNG data URL in the OpenAI vision format) with a short text of the score and milestones to any
chat backend that accepts image parts, and reads one final ``Action: <action>`` line (UI-TARS style)
in the env's action mode: a move name (``"text"``), a move index (``"discrete"``), or a mouse/keyboard
action such as ``click(120, 64)`` (``"mouse_keyboard"``).

:class:`CoastAgent` plays the point-and-click adventures (``AgentRL/FlashGame-EscapeRoom-v0``,
``AgentRL/FlashGame-HiddenObject-v0``) on text observations with COAST (seek, map, solve): a clue
memory keeps every clue the message bar showed (it shows a clue only once, right after the action
that revealed it), a mapper turns clues into subtasks (type the remembered code on the keypad, click
where a note says something is hidden, use an item where a hint says it is needed), a seeker explores
(clicks what was not clicked yet, tries items on objects) when no subtask is ready, and a solver
picks the move, optionally asking an LLM to choose among the candidates.

>>> parse_action_line("I see a card.\nAction: click(10, 12)")
'click(10, 12)'
>>> extract_clues("Message: Behind the clock someone scratched: SAFE CODE 4 6 9 3. Remember it!", step=3)
[Clue(kind='code', value='4693', step=3, room='', detail='')]
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentrl.agents.base import BaseAgent
from agentrl.llm.base import ChatMessage, GenerationConfig, LLMBackend

__all__ = [
    "Clue",
    "CoastAgent",
    "Scene",
    "Subtask",
    "VisionGameAgent",
    "encode_png_data_url",
    "extract_clues",
    "parse_action_line",
    "parse_scene",
]

_ACTION_LINE = re.compile(r"^\s*\**\s*action\s*\**\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


def parse_action_line(reply: str) -> str | None:
    r"""The text after the last ``Action:`` line of a reply (quotes and backticks stripped), or None.

    >>> parse_action_line("Thought: go left.\nAction: `left`")
    'left'
    >>> parse_action_line("no action here") is None
    True
    """
    matches = _ACTION_LINE.findall(reply or "")
    if not matches:
        return None
    action = matches[-1].strip().strip("`").strip()
    if len(action) >= 2 and action[0] == action[-1] and action[0] in "'\"":
        action = action[1:-1].strip()
    action = action.rstrip(".").strip()
    return action or None


def encode_png_data_url(pixels: Any) -> str:
    """An ``HxWx3`` uint8 image as a ``data:image/png;base64,...`` URL (needs Pillow).

    >>> encode_png_data_url(np.zeros((2, 3, 3), np.uint8)).startswith("data:image/png;base64,")
    True
    """
    from PIL import Image  # lazily: only the vision agent needs Pillow

    array = np.asarray(pixels)
    if array.dtype != np.uint8:
        array = np.clip(array, 0, 255).astype(np.uint8)
    if not (array.ndim == 2 or (array.ndim == 3 and array.shape[2] in (3, 4))):
        raise ValueError(f"expected an HxW or HxWx3 image, got shape {array.shape}")
    image = Image.fromarray(np.ascontiguousarray(array))  # L, RGB or RGBA from the shape
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


# ---------------------------------------------------------------------------------------------- vision


class VisionGameAgent(BaseAgent):
    """The reference VLM game agent: screenshot in, ``Action: ...`` out (see the module docstring).

    Each :meth:`act` sends the system prompt (the action format of the env's ``action_mode``), the
    last ``history`` turns as text only (the screenshot of an old turn is left out), and the current
    turn as a list of parts: ``{"type": "text", ...}`` and ``{"type": "image_url", "image_url":
    {"url": "data:image/png;base64,..."}}``. The messages go to ``backend.generate`` as they are, so
    the backend must accept list contents (OpenAI-compatible vision servers do).

    A reply without a usable ``Action:`` line gives a safe default (``wait()`` in mouse mode, the first
    move otherwise) and counts in :attr:`parse_failures`.

    Args:
        backend: a chat backend whose model reads images.
        max_tokens: the most tokens per reply (thought plus action).
        temperature: 0 for greedy decoding.
        history: how many earlier turns (user text and reply) to keep.

    Attributes:
        parse_failures: replies of this episode that gave no usable action.
        replies: the raw replies of this episode.
        last_messages: the messages of the latest request.
    """

    name = "vision"

    def __init__(
        self, backend: LLMBackend, *, max_tokens: int = 64, temperature: float = 0.0, history: int = 4
    ) -> None:
        super().__init__()
        if max_tokens < 1 or history < 0:
            raise ValueError("max_tokens must be >= 1 and history >= 0")
        self.backend = backend
        self.max_tokens = int(max_tokens)
        self.temperature = float(temperature)
        self.history = int(history)
        self.parse_failures = 0
        self.replies: list[str] = []
        self.last_messages: list[dict[str, Any]] = []
        self._turns: list[tuple[str, str]] = []
        self._step = 0

    # -- env facts ---------------------------------------------------------------------------
    @property
    def _game(self) -> Any:
        return getattr(self.env, "unwrapped", self.env)

    @property
    def action_mode(self) -> str:
        """The bound env's action mode (``"text"`` when unbound)."""
        return str(getattr(self._game, "action_mode", "text"))

    @property
    def moves(self) -> tuple[str, ...]:
        """The bound env's move names."""
        return tuple(getattr(self._game, "moves", ()))

    def system_prompt(self, image_size: tuple[int, int] | None = None) -> str:
        """The instructions for the env's action mode; ``image_size`` is (H, W) of the screenshot."""
        spec = getattr(self._game, "spec_game", None)
        title = getattr(spec, "title", "a browser game")
        description = getattr(spec, "description", "")
        lines = [f"You are playing {title}. {description}".strip(), "Each turn you see a screenshot of the game."]
        if self.action_mode == "mouse_keyboard":
            height, width = image_size or tuple(getattr(self._game, "obs_size", (84, 84)))
            lines += [
                f"The screenshot is {width}x{height} pixels; x goes right from 0 to {width - 1}, "
                f"y goes down from 0 to {height - 1}.",
                "Actions: click(x, y), double_click(x, y), drag(x1, y1, x2, y2), press(key) with a key such as "
                'ArrowUp, ArrowDown, ArrowLeft, ArrowRight, space, Enter, Escape, a-z or 0-9, type("text"), wait().',
            ]
        else:
            lines.append("Moves: " + ", ".join(self.moves) + ".")
        lines.append(
            "First think briefly about what you see and what to do, then end with one final line "
            "'Action: <action>' naming exactly one action."
        )
        return "\n".join(lines)

    # -- episode -----------------------------------------------------------------------------
    def reset(self, info: dict[str, Any]) -> None:
        """Forget the previous episode."""
        self.parse_failures = 0
        self.replies = []
        self._turns = []
        self._step = 0

    def _turn_text(self, info: dict[str, Any], text: str | None) -> str:
        parts = [f"Step {self._step}."]
        if "score" in info:
            parts.append(f"Score: {info['score']:g}.")
        if "milestones_total" in info:
            parts.append(f"Milestones: {info.get('milestones_done', 0)}/{info['milestones_total']}.")
        if info.get("action_error"):
            parts.append(f"Your last action failed: {info['action_error']}.")
        if text:
            parts.append(f"Text: {text}")
        return " ".join(parts)

    def build_messages(self, observation: Any, info: dict[str, Any]) -> list[dict[str, Any]]:
        """The chat messages for this observation (system, text-only history, the turn with its image)."""
        pixels, text = _split_observation(observation)
        turn = self._turn_text(info, text)
        size = None if pixels is None else (int(np.shape(pixels)[0]), int(np.shape(pixels)[1]))
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt(size)}]
        for user, reply in self._turns[-self.history :] if self.history else []:
            messages.append({"role": "user", "content": user + " [screenshot omitted]"})
            messages.append({"role": "assistant", "content": reply})
        if pixels is None:
            content: Any = turn
        else:
            content = [
                {"type": "text", "text": turn + " Here is the current screen."},
                {"type": "image_url", "image_url": {"url": encode_png_data_url(pixels)}},
            ]
        messages.append({"role": "user", "content": content})
        return messages

    def act(self, observation: Any, info: dict[str, Any]) -> Any:
        """Ask the model and return its action in the env's action mode."""
        self._step += 1
        messages = self.build_messages(observation, info)
        self.last_messages = messages
        config = GenerationConfig(max_tokens=self.max_tokens, temperature=self.temperature)
        reply = self.backend.generate(messages, config).text  # type: ignore[arg-type]
        self.replies.append(reply)
        _, text = _split_observation(observation)
        self._turns.append((self._turn_text(info, text), reply))
        return self.parse_reply(reply)

    def parse_reply(self, reply: str) -> Any:
        """The action a reply names, or the safe default (counted in :attr:`parse_failures`)."""
        action = parse_action_line(reply)
        mode = self.action_mode
        if mode == "mouse_keyboard":
            from agentrl.envs.games.env import parse_pointer_action

            if action is not None and isinstance(parse_pointer_action(action), dict):
                return action
            self.parse_failures += 1
            return "wait()"
        moves = self.moves
        chosen = _match_move(action, moves) if action is not None else None
        if chosen is None:
            self.parse_failures += 1
            chosen = moves[0] if moves else ""
        if mode == "discrete":
            return moves.index(chosen) if chosen in moves else 0
        return chosen


def _split_observation(observation: Any) -> tuple[Any, str | None]:
    """(pixels or None, text or None) of a pixels, text or pixels_text observation."""
    if isinstance(observation, dict):
        return observation.get("pixels"), observation.get("text")
    if isinstance(observation, str):
        return None, observation
    return observation, None


def _match_move(action: str, moves: Sequence[str]) -> str | None:
    """The move ``action`` names (exact, then case-insensitive, then a lone move inside it)."""
    if action in moves:
        return action
    lowered = {m.lower(): m for m in moves}
    if action.lower() in lowered:
        return lowered[action.lower()]
    inside = [m for m in moves if re.search(rf"(?<![\w]){re.escape(m.lower())}(?![\w])", action.lower())]
    return max(inside, key=len) if inside else None


# ---------------------------------------------------------------------------------------------- COAST


@dataclass(frozen=True)
class Clue:
    """One clue from the message bar.

    Attributes:
        kind: ``"code"`` (a 4-digit code; ``detail="decoy"`` when the text says it means nothing),
            ``"hidden"`` (``value`` is under or marked at ``detail``), ``"need"`` (item ``value`` is
            needed on object ``detail``) or ``"item"`` (``value`` was obtained).
        value: the code, the hidden thing (may be ``""``: "something") or the item.
        step: the step the clue was seen.
        room: the room it was seen in.
        detail: see ``kind``.
    """

    kind: str
    value: str
    step: int
    room: str = ""
    detail: str = ""


@dataclass
class Scene:
    """What a text observation says: room, objects (name -> move), inventory, keypad, goals, message."""

    room: str = ""
    objects: dict[str, str] = field(default_factory=dict)
    inventory: list[str] = field(default_factory=list)
    selected: str | None = None
    keypad: str | None = None
    goals: list[str] = field(default_factory=list)
    message: str = ""


@dataclass
class Subtask:
    """A short plan: ``moves`` in order, and why (``reason``)."""

    reason: str
    moves: list[str]


_CODE = re.compile(r"(?<![\d])(\d(?: ?\d){3})(?![\d])")
_HIDDEN_UNDER = re.compile(r"\bthe ([a-z][a-z ]*?) is (?:under|behind|inside|in) the ([a-z][a-z ]*?)[.!,]", re.I)
_POINTS_AT = re.compile(r"\bpoint(?:s|ing)? (?:at|to) the ([a-z][a-z ]*?)[.!,]", re.I)
_NEED = re.compile(
    r"\b(?:you need|needs?|requires?|use|try) (?:a |an |the )?([a-z][a-z ]*?)\b(?: on the ([a-z ]+?))?[.!,]", re.I
)
#: wordings that say which item a locked or puzzling object wants (escape-room style)
_HINT_WORDS = (
    ("keyhole", "key"),
    ("screws", "screwdriver"),
    ("pry", "crowbar"),
    ("nailed", "crowbar"),
    ("in this light", "uv torch"),
    ("too small to read", "magnifier"),
    ("card reader", "keycard"),
)
_CONTAINER_WORDS = ("cup", "hat", "bucket", "box", "drawer", "chest", "crate", "cabinet", "safe")


def parse_scene(text: str, moves: Sequence[str] = ()) -> Scene:
    """Parse an escape-room or hidden-object text observation.

    >>> s = parse_scene("Room 1 of 2 (Attic). Objects: door, clock. Inventory: key (selected). Message: Hi.")
    >>> s.room, s.objects, s.inventory, s.selected, s.message
    ('1', {'door': 'click door', 'clock': 'click clock'}, ['key'], 'key', 'Hi.')
    >>> s = parse_scene("Find: red key (found), blue cup. Clicks left: 5. "
    ...                 "Visible objects (id: name): 0: blue cup. Message: x")
    >>> s.objects, s.goals
    ({'blue cup': 'click 0'}, ['blue cup'])
    """
    scene = Scene()
    head, _, message = text.partition("Message:")
    scene.message = message.strip()
    room = re.search(r"Room (\d+) of \d+", head)
    scene.room = room.group(1) if room else ""
    visible = re.search(r"Visible objects \(id: name\):\s*(.*?)\.\s*$", head.strip(), re.S)
    if visible:
        for part in visible.group(1).split(","):
            ident, _, name = part.strip().partition(":")
            if ident.strip().isdigit() and name.strip():
                scene.objects[name.strip()] = f"click {ident.strip()}"
    objects = re.search(r"Objects:\s*(.*?)\.\s", head + " ")
    if objects:
        for name in (n.strip() for n in objects.group(1).split(",")):
            if name:
                scene.objects[name] = f"click {name}"
    inventory = re.search(r"Inventory:\s*(.*?)\.\s", head + " ")
    if inventory and inventory.group(1).strip() != "empty":
        for item in (i.strip() for i in inventory.group(1).split(",")):
            if item.endswith("(selected)"):
                item = item.removesuffix("(selected)").strip()
                scene.selected = item
            if item:
                scene.inventory.append(item)
    keypad = re.search(r"keypad is open; entered so far: '(\d*)'", head)
    scene.keypad = keypad.group(1) if keypad else None
    goals = re.search(r"Find:\s*(.*?)\.\s", head + " ")
    if goals:
        scene.goals = [g.strip() for g in goals.group(1).split(",") if g.strip() and not g.strip().endswith("(found)")]
    if moves:
        scene.objects = {name: move for name, move in scene.objects.items() if move in moves}
    return scene


def extract_clues(text: str, *, step: int, room: str = "", items: Sequence[str] = ()) -> list[Clue]:
    """The clues in a text observation's message (``items``: the item names the game knows).

    >>> [c.kind + ":" + c.value + "@" + c.detail for c in extract_clues(
    ...     "Message: Found it! A note: the red key is under the blue cup.", step=1)]
    ['hidden:red key@blue cup']
    >>> [c.detail for c in extract_clues("Message: Scratched on the fan: 1 2 3 4 ... it means nothing.", step=1)]
    ['decoy']
    """
    message = text.partition("Message:")[2] if "Message:" in text else text
    clues: list[Clue] = []
    for match in _CODE.finditer(message):
        decoy = "means nothing" in message.lower()
        clues.append(Clue("code", match.group(1).replace(" ", ""), step, room, "decoy" if decoy else ""))
    for match in _HIDDEN_UNDER.finditer(message):
        clues.append(Clue("hidden", match.group(1).strip().lower(), step, room, match.group(2).strip().lower()))
    for match in _POINTS_AT.finditer(message):
        clues.append(Clue("hidden", "", step, room, match.group(1).strip().lower()))
    lowered = message.lower()
    for match in _NEED.finditer(message):
        item = match.group(1).strip().lower()
        if item in items:
            clues.append(Clue("need", item, step, room, (match.group(2) or "").strip().lower()))
    for words, item in _HINT_WORDS:
        if words in lowered and item in items:
            clues.append(Clue("need", item, step, room, ""))
    for match in re.finditer(
        r"\b(?:find|found|inside:|take|took|got|pick up|picked up) (?:a |an |the )?([a-z ]+?)[.!,]", lowered
    ):
        if match.group(1).strip() in items:
            clues.append(Clue("item", match.group(1).strip(), step, room))
    return clues


class CoastAgent(BaseAgent):
    """COAST (seek, map, solve) for the point-and-click adventures, on text observations.

    Needs ``obs_type="text"`` or ``"pixels_text"`` and ``action_mode="text"``; always returns a move
    name from ``env.unwrapped.moves``.

    * Clue memory (:attr:`clues`): every observation's message is scanned for 4-digit codes, "X is
      under Y" notes and "points at Y" marks, "you need Z" hints (and the escape room's wordings:
      a keyhole wants a key...), and items obtained; each is kept with its step and room.
    * Mapper (:meth:`subtasks`): enter the remembered code on an open keypad (or open the keypad
      first), click the place a note points at, click a listed goal that is visible, use a hinted item
      on its object (``select Z`` then ``click W``); done subtasks are dropped.
    * Seeker (:meth:`explore`): click objects of the current room not clicked yet (containers first),
      then try items on objects not tried yet.
    * Solver: the first move of the first candidate, or with ``backend`` the LLM's choice among the
      numbered candidates (a number or a move name; the first candidate when the reply does not parse).

    Args:
        backend: an optional LLM backend for the solver.
        max_tokens: the most tokens of the LLM's reply.

    Attributes:
        clues: the clue memory of this episode.
        last_candidates: the candidate moves of the latest step.
        prompts: the LLM prompts of this episode (user contents).
        llm_choices: steps where the LLM's reply chose the move.
        llm_fallbacks: steps where the reply did not parse and the first candidate was taken.
    """

    name = "coast"

    def __init__(self, backend: LLMBackend | None = None, *, max_tokens: int = 48) -> None:
        super().__init__()
        if max_tokens < 1:
            raise ValueError("max_tokens must be >= 1")
        self.backend = backend
        self.max_tokens = int(max_tokens)
        self.reset({})

    @property
    def moves(self) -> tuple[str, ...]:
        """The bound env's move names."""
        return tuple(getattr(getattr(self.env, "unwrapped", self.env), "moves", ()))

    @property
    def items(self) -> tuple[str, ...]:
        """The item names the game knows (from its ``select ...`` moves)."""
        return tuple(m.removeprefix("select ") for m in self.moves if m.startswith("select "))

    def reset(self, info: dict[str, Any]) -> None:
        """Forget the previous episode."""
        self.clues: list[Clue] = []
        self.last_candidates: list[str] = []
        self.prompts: list[str] = []
        self.llm_choices = 0
        self.llm_fallbacks = 0
        self._step = 0
        self._clicked: dict[str, dict[str, int]] = {}  # room -> object -> step of the last bare click
        self._tried: dict[str, set[tuple[str, str]]] = {}  # room -> (item, object) tried
        self._opened: set[tuple[str, str]] = set()
        self._wrong_codes: set[tuple[str, str]] = set()
        self._plan: list[str] = []
        self._last_click: str | None = None
        self._last_code: str | None = None

    # -- memory ------------------------------------------------------------------------------
    def observe(self, text: str) -> Scene:
        """Parse one observation and update the clue memory and the done-sets."""
        scene = parse_scene(text, self.moves)
        message = scene.message.lower()
        for clue in extract_clues(text, step=self._step, room=scene.room, items=self.items):
            if clue.kind == "need" and not clue.detail and self._last_click:
                clue = Clue("need", clue.value, clue.step, clue.room, self._last_click)
            if clue.kind == "need" and not clue.detail:
                continue  # a hint about no object in particular
            if not any(
                c.kind == clue.kind and c.value == clue.value and c.detail == clue.detail and c.room == clue.room
                for c in self.clues
            ):
                self.clues.append(clue)
        if "wrong code" in message and self._last_code:
            self._wrong_codes.add((scene.room, self._last_code))
        for name in scene.objects:
            if re.search(rf"(you open the {re.escape(name)}\b|the {re.escape(name)} (is open|swings open))", message):
                self._opened.add((scene.room, name))
        return scene

    def _code(self, room: str) -> str | None:
        codes = [c for c in self.clues if c.kind == "code" and (room, c.value) not in self._wrong_codes]
        ranked = sorted(codes, key=lambda c: (c.room != room, c.detail == "decoy", -c.step))
        return ranked[0].value if ranked else None

    # -- mapper ------------------------------------------------------------------------------
    def subtasks(self, scene: Scene) -> list[Subtask]:
        """The subtasks the clues make ready now (done ones dropped)."""
        room, tasks = scene.room, []
        clicked = self._clicked.get(room, {})
        tried = self._tried.get(room, set())
        code = self._code(room)
        if scene.keypad is not None:
            if code and code.startswith(scene.keypad) and len(scene.keypad) < len(code):
                tasks.append(Subtask(f"enter the code {code}", [f"enter {d}" for d in code[len(scene.keypad) :]]))
            else:
                tasks.append(Subtask("no usable code: leave the keypad", ["back"]))
            return tasks
        if code and "safe" in scene.objects and (room, "safe") not in self._opened:
            tasks.append(Subtask(f"open the safe with {code}", ["click safe", *(f"enter {d}" for d in code)]))
        for clue in self.clues:
            if clue.kind != "hidden" or clue.room != room:
                continue
            place = scene.objects.get(clue.detail)
            if place and clicked.get(clue.detail, -1) < clue.step:
                target = scene.objects.get(clue.value)
                tasks.append(Subtask(f"the note points at the {clue.detail}", [place, *([target] if target else [])]))
        for goal in scene.goals:
            if goal in scene.objects:
                tasks.append(Subtask(f"find the {goal}", [scene.objects[goal]]))
        for clue in self.clues:
            if clue.kind != "need" or clue.value not in scene.inventory or clue.detail not in scene.objects:
                continue
            if (clue.value, clue.detail) in tried or (room, clue.detail) in self._opened:
                continue
            tasks.append(
                Subtask(f"use the {clue.value} on the {clue.detail}", self._use(scene, clue.value, clue.detail))
            )
        return [t for t in tasks if t.moves]

    def _use(self, scene: Scene, item: str, obj: str) -> list[str]:
        click = scene.objects[obj]
        return [click] if scene.selected == item else [f"select {item}", click]

    # -- seeker ------------------------------------------------------------------------------
    def explore(self, scene: Scene) -> list[Subtask]:
        """Exploration subtasks: unclicked objects, then untried item-object pairs, then re-clicks."""
        room = scene.room
        clicked = self._clicked.get(room, {})
        tried = self._tried.get(room, set())
        tasks: list[Subtask] = []
        fresh = [name for name in scene.objects if name not in clicked]
        fresh.sort(key=lambda n: not any(w in n for w in _CONTAINER_WORDS))
        pairs = [
            (item, obj)
            for item in scene.inventory
            for obj in scene.objects
            if (item, obj) not in tried and (room, obj) not in self._opened
        ]
        if scene.selected:  # finish what a selection started before anything else
            pairs.sort(key=lambda p: p[0] != scene.selected)
        deselect = ["back"] if scene.selected and "back" in self.moves else []
        if scene.selected and pairs and pairs[0][0] == scene.selected:
            tasks += [Subtask(f"try the {i} on the {o}", self._use(scene, i, o)) for i, o in pairs]
        tasks += [Subtask(f"look at the {name}", [*deselect, scene.objects[name]]) for name in fresh]
        tasks += [Subtask(f"try the {i} on the {o}", self._use(scene, i, o)) for i, o in pairs]
        if not tasks:
            again = sorted(scene.objects, key=lambda n: clicked.get(n, -1))
            tasks += [Subtask(f"look again at the {name}", [*deselect, scene.objects[name]]) for name in again]
        return tasks

    # -- solver ------------------------------------------------------------------------------
    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """The next move name."""
        text = observation.get("text", "") if isinstance(observation, dict) else str(observation)
        self._step += 1
        scene = self.observe(text)
        moves = self.moves
        if self._plan and self._plan_valid(scene, self._plan[0]):
            move = self._plan.pop(0)
            self.last_candidates = [move]
        else:
            self._plan = []
            tasks = self.subtasks(scene) or self.explore(scene)
            seen: dict[str, Subtask] = {}
            for task in tasks:
                if task.moves[0] in moves and task.moves[0] not in seen:
                    seen[task.moves[0]] = task
            self.last_candidates = list(seen)[:8]
            if not self.last_candidates:
                return "back" if "back" in moves else (moves[0] if moves else "")
            move = self._choose(text, scene, self.last_candidates, [seen[m].reason for m in self.last_candidates])
            self._plan = list(seen[move].moves[1:])
        self._record(scene, move)
        return move

    def _plan_valid(self, scene: Scene, move: str) -> bool:
        if move not in self.moves:
            return False
        if move.startswith("enter "):
            return scene.keypad is not None
        if move.startswith("select "):
            return move.removeprefix("select ") in scene.inventory and scene.keypad is None
        if move.startswith("click "):
            return move in scene.objects.values() and scene.keypad is None
        return True

    def _record(self, scene: Scene, move: str) -> None:
        room = scene.room
        if move.startswith("click "):
            name = next((n for n, m in scene.objects.items() if m == move), move.removeprefix("click "))
            if scene.selected and scene.keypad is None:
                self._tried.setdefault(room, set()).add((scene.selected, name))
                self._last_click = None
            else:
                self._clicked.setdefault(room, {})[name] = self._step
                self._last_click = name
        if move.startswith("enter ") and scene.keypad is not None:
            entered = scene.keypad + move.removeprefix("enter ")
            self._last_code = entered if len(entered) == 4 else None

    def _choose(self, text: str, scene: Scene, candidates: list[str], reasons: list[str]) -> str:
        if self.backend is None or len(candidates) == 1:
            return candidates[0]
        remembered = [c for c in self.clues if c.kind in ("code", "hidden", "need")][-6:]
        notes = "; ".join(f"{c.kind} {c.value} {c.detail}".strip() for c in remembered) or "none"
        listing = "\n".join(
            f"{i}. {move} ({why})" for i, (move, why) in enumerate(zip(candidates, reasons, strict=True), 1)
        )
        prompt = (
            f"Game screen: {text}\nRemembered clues: {notes}\nCandidate moves:\n{listing}\n"
            "Reply with the number of the best move."
        )
        self.prompts.append(prompt)
        messages: list[ChatMessage] = [
            {"role": "system", "content": "You play a point-and-click adventure. Choose one of the numbered moves."},
            {"role": "user", "content": prompt},
        ]
        try:
            reply = self.backend.generate(messages, GenerationConfig(max_tokens=self.max_tokens, temperature=0.0)).text
        except Exception:  # a failing LLM must not stop the game: take the mapper's first choice
            self.llm_fallbacks += 1
            return candidates[0]
        number = re.search(r"\d+", reply or "")
        if number and 1 <= int(number.group()) <= len(candidates):
            self.llm_choices += 1
            return candidates[int(number.group()) - 1]
        named = [m for m in candidates if m.lower() in (reply or "").lower()]
        if named:
            self.llm_choices += 1
            return max(named, key=len)
        self.llm_fallbacks += 1
        return candidates[0]
