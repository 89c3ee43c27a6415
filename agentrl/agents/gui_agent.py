r"""``GUIAgent``: the reference desktop agent for ``AgentRL/OSWorld-v0`` over any chat backend.

It prompts like OSWorld's baseline agents and UI-TARS: a system prompt gives the task format, the
screen size and the env's action space (``pyautogui`` code in a ```` ```python ```` block, or
``computer_13`` JSON, or exactly ``WAIT``/``DONE``/``FAIL``), and asks for a reply of the form
``Thought: ...`` then ``Action: ...``. The action is pulled out of the reply (a fenced block, a JSON
object, a bare special word, or the text after the last ``Action:`` line) and validated with the env's
own parsers (:func:`~agentrl.envs.osworld.actions.parse_pyautogui`,
:func:`~agentrl.envs.osworld.actions.parse_computer13`) before it is returned; an unusable reply is
retried once with the error shown, then the agent falls back to ``WAIT`` and counts a parse failure.

Two modes:

* **vision** (the observation has a ``screenshot`` and ``vision`` is on; the default unless the backend
  is the embedded SmolLM2): the user turn is ``[text, image_url]`` parts, the image a PNG data URL, as
  any OpenAI-compatible VLM server accepts.
* **text-only** (no screenshot, ``vision=False``, or SmolLM2): the turn is the instruction and the
  accessibility tree, trimmed to ``a11y_max_chars``. For SmolLM2 (``compact``) the prompt is a few
  lines and the tree becomes a list of the named widgets (``Save (push-button), ...``), no history.

**Grounding shorthands** (what makes text-only mode usable by a small model, which rarely writes valid
pyautogui code): besides code or JSON, the action may be one call of

* ``click("<name>")``, ``double_click("<name>")``, ``right_click("<name>")``: the centre of the widget
  of the accessibility table whose name matches (exact, then case-insensitive equal, then the shortest
  name containing it case-insensitively, then a widget whose text contains it);
* ``click(x, y)`` (and the double/right variants) at coordinates;
* ``type("text")`` (or ``write``), ``press("key")``, ``hotkey("ctrl", "s")``.

They are turned into the env's action form (pyautogui code or computer_13 JSON) and validated like
any other action (coordinates on the screen, known key names). Names need the linearized table of
the ``a11y_tree``/``screenshot_a11y_tree`` observations (it has positions; the ``som`` marks table
has none). As a last resort, a reply in words (``Click the Save button.``) clicks the widget named
first after the verb on that line: what the 135M SmolLM2 actually writes.

>>> table = "tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)\n"
>>> table += 'push-button\tSave\t""\t\t\t(100, 50)\t(80, 30)'
>>> extract_action('Thought: save it.\nAction: click("save")', widgets=parse_a11y_table(table))
"pyautogui.click(x=140, y=65, button='left')"
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentrl.agents.base import BaseAgent
from agentrl.agents.game_agents import encode_png_data_url
from agentrl.envs.osworld.a11y import trim
from agentrl.envs.osworld.actions import (
    ACTION_TYPES,
    SPECIAL_ACTIONS,
    Action,
    ActionError,
    parse_computer13,
    parse_pyautogui,
)
from agentrl.llm.base import GenerationConfig, LLMBackend

__all__ = [
    "COMPUTER13_HELP",
    "GUIAgent",
    "Widget",
    "extract_action",
    "ground",
    "parse_a11y_table",
    "trim_table",
]

#: the computer_13 action types and their parameters, as the system prompt lists them
COMPUTER13_HELP: dict[str, str] = {
    "MOVE_TO": "x, y",
    "CLICK": "x?, y?, button? (left|right|middle), num_clicks? (1-3)",
    "MOUSE_DOWN": "button?",
    "MOUSE_UP": "button?",
    "RIGHT_CLICK": "x?, y?",
    "DOUBLE_CLICK": "x?, y?",
    "DRAG_TO": "x, y",
    "SCROLL": "dx, dy (-100..100; dy > 0 scrolls up)",
    "TYPING": "text",
    "PRESS": "key",
    "KEY_DOWN": "key",
    "KEY_UP": "key",
    "HOTKEY": 'keys (a list like ["ctrl", "c"])',
    "WAIT": "none",
    "FAIL": "none",
    "DONE": "none",
}
assert tuple(COMPUTER13_HELP) == ACTION_TYPES

_POSITION = re.compile(r"\(\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*\)")
_ACTION_MARK = re.compile(r"^[ \t]*[*#]*[ \t]*action[ \t]*[*]*[ \t]*:[ \t]*", re.IGNORECASE | re.MULTILINE)
_SHORTHAND = re.compile(
    r"(?<![\w.])(click|double_click|right_click|type|write|press|hotkey)\s*\((.*?)\)\s*;?\s*$",
    re.DOTALL,
)
_CODE_LINE = re.compile(r"^(?:import\s+\w|from\s+\w+\s+import\s|pyautogui\.|time\.sleep\()")
_SMALL_BACKENDS = ("smollm",)


# ---------------------------------------------------------------------------------------------- helpers


@dataclass(frozen=True)
class Widget:
    """One row of OSWorld's linearized accessibility table, with its box in screen pixels.

    >>> Widget("push-button", "OK", "", 10, 20, 80, 30).center
    (50, 35)
    """

    tag: str
    name: str
    text: str
    x: int
    y: int
    w: int
    h: int

    @property
    def center(self) -> tuple[int, int]:
        """The centre of the box (``(x, y)`` for an empty box)."""
        return self.x + max(self.w, 0) // 2, self.y + max(self.h, 0) // 2


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('""', '"')
    return text


def parse_a11y_table(table: str | None) -> list[Widget]:
    r"""The widgets of a linearized accessibility table (header ``tag\tname\ttext\t...position...``).

    Rows without a readable position and size are skipped; a table without a ``position`` column
    (such as the set-of-marks table) gives no widgets.

    >>> table = "tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)\n"
    >>> table += 'menu\tFile\t""\t\t\t(0, 25)\t(40, 20)\nlabel\t\t"say ""hi"" now"\t\t\t(5, 60)\t(90, 18)'
    >>> parse_a11y_table(table)  # doctest: +NORMALIZE_WHITESPACE
    [Widget(tag='menu', name='File', text='', x=0, y=25, w=40, h=20),
     Widget(tag='label', name='', text='say "hi" now', x=5, y=60, w=90, h=18)]
    >>> parse_a11y_table("index\ttag\tname\ttext\n1\tmenu\tFile\t")
    []
    """
    lines = (table or "").splitlines()
    if not lines:
        return []
    header = [h.strip().lower() for h in lines[0].split("\t")]
    try:
        pos_col = next(i for i, h in enumerate(header) if h.startswith("position"))
        size_col = next(i for i, h in enumerate(header) if h.startswith("size"))
    except StopIteration:
        return []
    cols = {name: header.index(name) for name in ("tag", "name", "text") if name in header}
    widgets = []
    for line in lines[1:]:
        cells = line.split("\t")
        if len(cells) <= max(pos_col, size_col):
            continue
        pos, size = _POSITION.search(cells[pos_col]), _POSITION.search(cells[size_col])
        if pos is None or size is None:
            continue

        def cell(name: str, cells: list[str] = cells) -> str:
            i = cols.get(name)
            return _unquote(cells[i]) if i is not None and i < len(cells) else ""

        x, y = (int(float(v)) for v in pos.groups())
        w, h = (int(float(v)) for v in size.groups())
        widgets.append(Widget(cell("tag"), cell("name"), cell("text"), x, y, w, h))
    return widgets


def ground(query: str, widgets: Sequence[Widget]) -> Widget | None:
    """The widget ``query`` names in the accessibility table, or None.

    Tried in order: the exact name, the name case-insensitively, the shortest name containing it, then
    the first widget whose text contains it (case-insensitive); boxes with an area come first.

    >>> ws = [Widget("menu", "File", "", 0, 0, 40, 20), Widget("push-button", "Save As", "", 0, 30, 60, 20),
    ...       Widget("push-button", "Save", "", 0, 60, 60, 20)]
    >>> ground("Save", ws).y, ground("save as", ws).y, ground("sav", ws).name, ground("Print", ws) is None
    (60, 30, 'Save', True)
    """
    query = query.strip()
    if not query:
        return None
    ordered = sorted(widgets, key=lambda w: w.w <= 0 or w.h <= 0)  # stable: table order within each group
    low = query.lower()
    tiers = (
        lambda w: w.name == query,
        lambda w: w.name.strip().lower() == low,
    )
    for test in tiers:
        found = [w for w in ordered if test(w)]
        if found:
            return found[0]
    containing = [w for w in ordered if low in w.name.lower()]
    if containing:
        return min(containing, key=lambda w: len(w.name))
    return next((w for w in ordered if low in w.text.lower()), None)


def trim_table(table: str, max_chars: int) -> str:
    r"""Keep the whole lines of ``table`` that fit ``max_chars``; a last line says how many were dropped.

    >>> trim_table("head\naaaa\nbbbb", 100)
    'head\naaaa\nbbbb'
    >>> print(trim_table("head\naaaa\nbbbb\ncccc", 12))
    head
    aaaa
    [... 2 more lines trimmed]
    """
    if max_chars < 1:
        raise ValueError("max_chars must be >= 1")
    return trim(table, max_chars, chars_per_token=1)


def _special_word(text: str) -> str | None:
    word = text.strip().strip("`*\"'.! \t\r\n").upper()
    return word if word in SPECIAL_ACTIONS else None


def _action_segment(reply: str) -> str:
    """The text after the last ``Action:`` marker, or the whole reply."""
    marks = list(_ACTION_MARK.finditer(reply))
    return reply[marks[-1].end() :].strip() if marks else reply.strip()


def _shorthand(segment: str, screen: tuple[int, int], widgets: Sequence[Widget] | None) -> dict[str, Any] | None:
    """A grounding shorthand call as a computer_13 dict, or None when the segment holds none."""
    if "pyautogui." in segment:
        return None
    body = segment.strip()
    fence = re.search(r"```[A-Za-z0-9_+-]*\s*\n?(.*?)```", body, re.DOTALL)
    if fence:
        body = fence.group(1).strip()
    body = body.strip("`").strip()
    match = _SHORTHAND.match(body)
    if match is None:
        return None
    name, raw = match.group(1), match.group(2)
    try:
        args = ast.literal_eval(f"({raw},)") if raw.strip() else ()
    except (ValueError, SyntaxError):
        raise ActionError(f'cannot read the arguments of {name}({raw}); use literals like {name}("Save")') from None
    if name in ("click", "double_click", "right_click"):
        kind = {"click": "CLICK", "double_click": "DOUBLE_CLICK", "right_click": "RIGHT_CLICK"}[name]
        if len(args) == 2 and all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in args):
            return {"action_type": kind, "parameters": {"x": args[0], "y": args[1]}}
        if len(args) == 1 and isinstance(args[0], str):
            if not widgets:
                raise ActionError(
                    f'{name}("{args[0]}") needs an accessibility tree with positions; click at coordinates instead'
                )
            widget = ground(args[0], widgets)
            if widget is None:
                names = ", ".join(dict.fromkeys(w.name for w in widgets if w.name))
                raise ActionError(f"no widget named {args[0]!r} in the accessibility tree; names: {names[:300]}")
            x, y = widget.center
            width, height = screen
            return {
                "action_type": kind,
                "parameters": {"x": min(max(x, 0), width - 1), "y": min(max(y, 0), height - 1)},
            }
        raise ActionError(f'{name} takes a widget name or x, y: {name}("Save") or {name}(100, 200)')
    if name in ("type", "write"):
        if len(args) != 1 or not isinstance(args[0], str):
            raise ActionError(f'{name} takes one string: {name}("hello")')
        return {"action_type": "TYPING", "parameters": {"text": args[0]}}
    if name == "press":
        if len(args) != 1 or not isinstance(args[0], str):
            raise ActionError('press takes one key name: press("enter")')
        return {"action_type": "PRESS", "parameters": {"key": args[0]}}
    if not args or not all(isinstance(a, str) for a in args):
        raise ActionError('hotkey takes key names: hotkey("ctrl", "s")')
    return {"action_type": "HOTKEY", "parameters": {"keys": list(args)}}


_NATURAL_CLICK = re.compile(
    r"\b(double[- ]?click|right[- ]?click|click|select|open|press)\b(.*)", re.IGNORECASE | re.DOTALL
)


def _natural_click(segment: str, widgets: Sequence[Widget]) -> dict[str, Any] | None:
    """``Click the Save button`` as a computer_13 dict: the widget named first after the verb, on its line.

    A small model often answers in words; this is tried only after the strict forms failed.
    """
    match = _NATURAL_CLICK.search(segment)
    if match is None:
        return None
    verb = match.group(1).lower().replace("-", "").replace(" ", "")
    rest = match.group(2).split("\n", 1)[0].lower()
    said: list[tuple[int, int, int, Widget]] = []
    for i, w in enumerate(widgets):
        name = w.name.strip().lower()
        found = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", rest) if name else None
        if found is not None:  # the first said, then the longest name, then boxes with an area
            said.append((found.start(), -len(name), int(w.w <= 0 or w.h <= 0) * len(widgets) + i, w))
    if not said:
        return None
    widget = min(said, key=lambda t: t[:3])[3]
    kind = {"doubleclick": "DOUBLE_CLICK", "rightclick": "RIGHT_CLICK"}.get(verb, "CLICK")
    x, y = widget.center
    return {"action_type": kind, "parameters": {"x": x, "y": y}}


def _find_json(text: str) -> str | None:
    """The first JSON object or list inside ``text``."""
    decoder = json.JSONDecoder()
    for tries, match in enumerate(re.finditer(r"[\[{]", text)):
        if tries >= 200:
            break
        try:
            value, end = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, (dict, list)) and value:
            return text[match.start() : end]
    return None


def _parse_code(segment: str) -> Action:
    try:
        return parse_pyautogui(segment)
    except ActionError as first:
        if "```" in segment:
            raise
        lines = [line.strip() for line in segment.splitlines() if _CODE_LINE.match(line.strip())]
        if not lines:
            raise first from None
        return parse_pyautogui("\n".join(lines))


def _to_env(action: Action, action_mode: str) -> str:
    if action.is_special:
        return action.kind
    if action_mode == "pyautogui":
        return action.code
    structured = action.structured or {}
    if structured.get("action_type") == "SEQUENCE":
        return json.dumps(structured["actions"])
    return json.dumps(structured)


def extract_action(
    reply: str,
    action_mode: str = "pyautogui",
    screen: tuple[int, int] = (1920, 1080),
    widgets: Sequence[Widget] | None = None,
) -> str:
    r"""The env action a reply names, validated; raises :class:`ActionError` (a message for the model).

    The action is the text after the last ``Action:`` line (the whole reply without one): exactly
    WAIT/DONE/FAIL, a grounding shorthand (see the module docstring; names need ``widgets``), then in
    ``pyautogui`` mode code (fenced blocks, or the raw text, or its lines that start with
    ``pyautogui.``), in ``computer_13`` mode JSON (fenced, raw, or the first object in the text).
    When all of these fail and ``widgets`` are given, words such as ``Click the Save button`` click
    the widget named first after the verb, on its line (small models often answer in words).
    Returns pyautogui code or ``"WAIT"``/``"DONE"``/``"FAIL"`` (``pyautogui``), or the normalised JSON
    text (``computer_13``). ``screen`` is ``(width, height)``.

    >>> extract_action("Thought: open the menu.\nAction:\n```python\npyautogui.click(10, 20)\n```")
    'pyautogui.click(10, 20)'
    >>> extract_action("Thought: all set.\nAction: DONE")
    'DONE'
    >>> extract_action('Action: {"action_type": "PRESS", "parameters": {"key": "Enter"}}', "computer_13")
    '{"action_type": "PRESS", "parameters": {"key": "enter"}}'
    >>> extract_action('Action: {"action_type": "CLICK", "parameters": {"x": 2000, "y": 5}}', "computer_13",
    ...                screen=(1280, 720))
    Traceback (most recent call last):
    ...
    agentrl.envs.osworld.actions.ActionError: CLICK: x=2000 is out of range; it must be from 0 to 1279
    >>> extract_action('Action: hotkey("ctrl", "s")')
    "pyautogui.hotkey('ctrl', 's')"
    >>> extract_action("Click the OK button.", widgets=[Widget("push-button", "OK", "", 10, 10, 20, 10)])
    "pyautogui.click(x=20, y=15, button='left')"
    """
    if action_mode not in ("pyautogui", "computer_13"):
        raise ValueError(f"action_mode must be 'pyautogui' or 'computer_13', got {action_mode!r}")
    segment = _action_segment(reply or "")
    if not segment:
        raise ActionError("the reply has no action; end with 'Action: ...'")
    word = _special_word(segment)
    if word is not None:
        return word
    short = _shorthand(segment, screen, widgets)
    if short is not None:
        return _to_env(parse_computer13(short, screen), action_mode)
    try:
        if action_mode == "pyautogui":
            return _to_env(_parse_code(segment), action_mode)
        try:
            parsed = parse_computer13(segment, screen)
        except ActionError as first:
            found = _find_json(segment)
            if found is None or found.strip() == segment.strip():
                raise first from None
            parsed = parse_computer13(found, screen)
        return _to_env(parsed, action_mode)
    except ActionError:
        natural = _natural_click(segment, widgets) if widgets else None
        if natural is None:
            raise
        width, height = screen
        params = natural["parameters"]
        params["x"], params["y"] = min(max(params["x"], 0), width - 1), min(max(params["y"], 0), height - 1)
        return _to_env(parse_computer13(natural, screen), action_mode)


# ---------------------------------------------------------------------------------------------- the agent


def _is_small(backend: Any) -> bool:
    name = str(getattr(backend, "name", "")).lower()
    return any(tag in name for tag in _SMALL_BACKENDS)


class GUIAgent(BaseAgent):
    """The reference desktop agent (see the module docstring).

    Each :meth:`act` sends the system prompt, the last ``history`` turns as short text (the
    observation of an old turn is left out) and the current turn: text, plus the screenshot as an
    ``image_url`` part in vision mode. The reply's action is validated; an unusable one is retried
    once with the error, then ``"WAIT"`` is returned and counted in :attr:`parse_failures`. When
    ``info["turns_left"] <= 1`` (or the deprecated ``steps_left``) the agent answers ``"DONE"``
    without asking the model.

    Args:
        backend: any chat backend; a VLM server for vision mode.
        vision: send the screenshot (``None``: when the observation has one, unless the backend is
            the embedded SmolLM2, which reads no images).
        grounding: offer and translate ``click("<name>")`` from the accessibility table.
        max_tokens: the most tokens per reply (``None``: 128 for SmolLM2, 512 otherwise).
        temperature: 0 for greedy decoding.
        history: how many earlier turns (turn summary and reply) to keep (``None``: 0 in compact
            mode, 3 otherwise).
        compact: a short prompt for small models (``None``: for SmolLM2): a few lines of instructions
            and, instead of the raw table, the list of named widgets (``Save (push-button), ...``);
            grounding shorthands are the suggested actions.
        a11y_max_chars: the accessibility tree's budget in the prompt (``None``: 6,000 characters for
            SmolLM2, 40,000 otherwise).
        retry: ask again once when a reply gives no usable action.
        seed: the sampling seed passed to the backend.

    Attributes:
        parse_failures: turns of this episode whose replies (and retry) gave no usable action.
        retries: turns that needed the retry.
        forced_done: turns answered ``DONE`` by the step guard.
        errors: the parse errors of this episode, in order.
        replies: the raw replies of this episode (retries included).
        last_messages: the messages of the latest request.
    """

    name = "gui"

    def __init__(
        self,
        backend: LLMBackend,
        *,
        vision: bool | None = None,
        grounding: bool = True,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        history: int | None = None,
        a11y_max_chars: int | None = None,
        retry: bool = True,
        seed: int | None = None,
        compact: bool | None = None,
    ) -> None:
        super().__init__()
        small = _is_small(backend)
        self.compact = small if compact is None else bool(compact)
        history = (0 if self.compact else 3) if history is None else int(history)
        max_tokens = (128 if small else 512) if max_tokens is None else int(max_tokens)
        a11y_max_chars = (6_000 if small else 40_000) if a11y_max_chars is None else int(a11y_max_chars)
        if max_tokens < 1 or history < 0 or a11y_max_chars < 1:
            raise ValueError("max_tokens and a11y_max_chars must be >= 1 and history >= 0")
        self.backend = backend
        self.vision = vision
        self.grounding = bool(grounding)
        self.max_tokens = max_tokens
        self.temperature = float(temperature)
        self.history = int(history)
        self.a11y_max_chars = a11y_max_chars
        self.retry = bool(retry)
        self.seed = seed
        self.parse_failures = 0
        self.retries = 0
        self.forced_done = 0
        self.errors: list[str] = []
        self.replies: list[str] = []
        self.last_messages: list[dict[str, Any]] = []
        self._turns: list[tuple[str, str]] = []
        self._step = 0

    # -- env facts ---------------------------------------------------------------------------
    @property
    def _desktop(self) -> Any:
        return getattr(self.env, "unwrapped", self.env)

    @property
    def action_mode(self) -> str:
        """The bound env's action mode (``"pyautogui"`` when unbound)."""
        return str(getattr(self._desktop, "action_mode", None) or "pyautogui")

    def screen_size(self, observation: Any = None) -> tuple[int, int]:
        """``(width, height)``: the env's, else the screenshot's, else 1920x1080."""
        width, height = getattr(self._desktop, "width", None), getattr(self._desktop, "height", None)
        if isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0:
            return width, height
        shot = observation.get("screenshot") if isinstance(observation, dict) else None
        if shot is not None and np.ndim(shot) >= 2:
            return int(np.shape(shot)[1]), int(np.shape(shot)[0])
        return 1920, 1080

    def uses_vision(self, observation: Any) -> bool:
        """Whether this observation's turn carries the screenshot."""
        has_shot = isinstance(observation, dict) and observation.get("screenshot") is not None
        wanted = (not _is_small(self.backend)) if self.vision is None else self.vision
        return bool(has_shot and wanted)

    # -- prompts -----------------------------------------------------------------------------
    def system_prompt(
        self, screen: tuple[int, int] | None = None, *, vision: bool = True, tree: bool = False, grounded: bool = False
    ) -> str:
        """The instructions: task format, screen size, action space and the reply format."""
        width, height = screen or self.screen_size()
        seen = []
        if vision:
            seen.append(f"a screenshot of the screen ({width}x{height} pixels)")
        if tree:
            seen.append(
                "the accessibility tree: one line per widget with its tag, name, text, class, description, "
                "top-left position (x, y) and size (w, h)"
            )
        if self.compact:
            return self._compact_prompt(width, height, grounded)
        lines = [
            "You are an agent that completes tasks on a Linux desktop computer by controlling the mouse and keyboard.",
            f"The screen is {width}x{height} pixels; x goes right from 0 to {width - 1}, "
            f"y goes down from 0 to {height - 1}.",
            "Each turn you get the task instruction, the step number, the error of your last action if it failed"
            + (", and " + " and ".join(seen) if seen else "")
            + ".",
        ]
        if self.action_mode == "computer_13":
            lines += [
                'Act with one JSON object {"action_type": TYPE, "parameters": {...}} (or a JSON list of them). '
                "The types and their parameters (? means optional):",
                *(f"  {kind}: {params}" for kind, params in COMPUTER13_HELP.items()),
                "Keys are pyautogui key names such as enter, tab, esc, backspace, ctrl, shift, alt, up, down, "
                "a-z, 0-9, f1-f12.",
                'Example: Action: {"action_type": "CLICK", "parameters": {"x": 100, "y": 200}}',
            ]
        else:
            lines += [
                "Act with Python code using pyautogui, in a ```python code block, for example "
                "pyautogui.click(x, y), pyautogui.write('text'), pyautogui.press('enter'), "
                "pyautogui.hotkey('ctrl', 's'). Each step's code runs on its own; do not use "
                "pyautogui.locateCenterOnScreen or pyautogui.screenshot.",
                "Example: Action:\n```python\npyautogui.click(100, 200)\n```",
            ]
        lines.append(
            "Instead of an action you may answer exactly one word: WAIT (wait for the screen to change), "
            "DONE (the task is complete) or FAIL (the task cannot be done)."
        )
        if grounded:
            lines.append(
                'Shortcuts: click("<name>"), double_click("<name>") and right_click("<name>") click the centre of '
                'the widget with that name in the accessibility tree; type("text"), press("key") and '
                'hotkey("ctrl", "s") use the keyboard. Example: Action: click("Save")'
            )
        lines.append("Reply in this format:\nThought: <what you see and what to do next>\nAction: <exactly one action>")
        return "\n".join(lines)

    def _compact_prompt(self, width: int, height: int, grounded: bool) -> str:
        if self.action_mode == "computer_13":
            raw = 'JSON like {"action_type": "CLICK", "parameters": {"x": 100, "y": 200}}'
        else:
            raw = "pyautogui code in a ```python block, like pyautogui.click(100, 200)"
        named = 'click("Save"), ' if grounded else "click(100, 200), "
        return (
            f"You operate a Linux computer with a {width}x{height} screen. "
            f'Answer with one action such as {named}type("hello"), press("enter"), hotkey("ctrl", "s"), '
            f"or {raw}; or DONE when the task is complete, FAIL if it is impossible, WAIT to wait. "
            "Reply: Thought: ... then Action: ..."
        )

    def _tree_text(self, tree: str, widgets: Sequence[Widget]) -> str:
        if self.compact and widgets:
            named = dict.fromkeys(f"{w.name.strip()} ({w.tag})" for w in widgets if w.name.strip())
            listing = trim_table("\n".join(named), self.a11y_max_chars).replace("\n", ", ")
            return "Widgets on screen: " + (listing or "none")
        return "Accessibility tree:\n" + trim_table(tree, self.a11y_max_chars)

    def _turn_text(self, observation: Any, info: dict[str, Any], *, with_tree: bool) -> str:
        obs = observation if isinstance(observation, dict) else {"instruction": str(observation)}
        parts = [f"Task: {obs.get('instruction', '')}", f"Step {self._step}."]
        left = _turns_left(info)
        if left is not None:
            parts[-1] += f" Steps left: {left}."
        if info.get("action_error"):
            parts.append(f"Your last action failed: {str(info['action_error'])[-800:]}")
        tree = obs.get("accessibility_tree")
        if with_tree and tree:
            parts.append(self._tree_text(str(tree), self._widgets(observation)))
        return "\n".join(parts)

    def build_messages(self, observation: Any, info: dict[str, Any]) -> list[dict[str, Any]]:
        """The chat messages for this observation (system, text-only history, the current turn)."""
        vision = self.uses_vision(observation)
        tree = isinstance(observation, dict) and bool(observation.get("accessibility_tree"))
        grounded = self.grounding and bool(self._widgets(observation))
        screen = self.screen_size(observation)
        system = self.system_prompt(screen, vision=vision, tree=tree, grounded=grounded)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        for user, reply in self._turns[-self.history :] if self.history else []:
            messages.append({"role": "user", "content": user + "\n[observation omitted]"})
            messages.append({"role": "assistant", "content": reply})
        turn = self._turn_text(observation, info, with_tree=True)
        if vision:
            content: Any = [
                {"type": "text", "text": turn + "\nHere is the current screenshot."},
                {"type": "image_url", "image_url": {"url": encode_png_data_url(observation["screenshot"])}},
            ]
        else:
            content = turn
        messages.append({"role": "user", "content": content})
        return messages

    def _widgets(self, observation: Any) -> list[Widget]:
        if not isinstance(observation, dict):
            return []
        return parse_a11y_table(observation.get("accessibility_tree"))

    # -- episode -----------------------------------------------------------------------------
    def reset(self, info: dict[str, Any]) -> None:
        """Forget the previous episode."""
        self.parse_failures = 0
        self.retries = 0
        self.forced_done = 0
        self.errors = []
        self.replies = []
        self._turns = []
        self._step = 0

    def _generate(self, messages: list[dict[str, Any]]) -> str:
        self.last_messages = messages
        config = GenerationConfig(max_tokens=self.max_tokens, temperature=self.temperature, seed=self.seed)
        reply = self.backend.generate(messages, config).text  # type: ignore[arg-type]
        self.replies.append(reply)
        return reply

    def act(self, observation: Any, info: dict[str, Any]) -> str:
        """Ask the model and return a validated action in the env's action mode."""
        self._step += 1
        left = _turns_left(info)
        if left is not None and left <= 1:
            self.forced_done += 1
            return "DONE"
        messages = self.build_messages(observation, info)
        reply = self._generate(messages)
        action, error = self._parse(reply, observation)
        if error is not None and self.retry:
            self.retries += 1
            retry = [
                *messages,
                {"role": "assistant", "content": reply},
                {
                    "role": "user",
                    "content": f"Your reply could not be used: {error}\n"
                    "Answer again: 'Thought: ...' then 'Action: ...' with exactly one valid action.",
                },
            ]
            reply = self._generate(retry)
            action, error = self._parse(reply, observation)
        self._turns.append((self._turn_text(observation, info, with_tree=False), reply))
        if action is None:
            self.parse_failures += 1
            return "WAIT"
        return action

    def _parse(self, reply: str, observation: Any) -> tuple[str | None, str | None]:
        widgets = self._widgets(observation) if self.grounding else None
        try:
            return extract_action(reply, self.action_mode, self.screen_size(observation), widgets), None
        except ActionError as exc:
            self.errors.append(str(exc))
            return None, str(exc)

    def parse_reply(self, reply: str, observation: Any = None) -> str:
        """The action a reply names (no retry), or ``"WAIT"`` counted in :attr:`parse_failures`."""
        action, _ = self._parse(reply, observation)
        if action is None:
            self.parse_failures += 1
            return "WAIT"
        return action


def _turns_left(info: dict[str, Any]) -> int | None:
    """The episode contract's ``turns_left`` (or OSWorld-v0's deprecated ``steps_left``)."""
    left = info.get("turns_left", info.get("steps_left"))
    return left if isinstance(left, int) and not isinstance(left, bool) else None
