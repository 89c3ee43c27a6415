r"""OSWorld's two action spaces, parsed and validated in pure Python (no desktop needed).

* ``pyautogui``: the agent writes Python code using ``pyautogui`` (raw, or in ```` ```python ```` fences,
  whose blocks are joined like OSWorld's ``parse_code_from_string``), or answers exactly ``WAIT``,
  ``DONE`` or ``FAIL``. :func:`parse_pyautogui` checks size and syntax.
* ``computer_13``: OSWorld's 13 structured actions (``desktop_env/actions.py`` ``ACTION_SPACE``) plus
  ``WAIT``, ``FAIL``, ``DONE``, as JSON ``{"action_type": "CLICK", "parameters": {...}}``.
  :func:`parse_computer13` validates them against the screen; :func:`to_pyautogui` turns them into
  pyautogui code, so one executor runs both forms. :func:`computer13_space` is the matching
  gymnasium ``Dict`` space and :func:`from_space_sample` converts its samples.

Both parsers return an :class:`Action` or raise :class:`ActionError`, whose message is meant for the
agent (the env shows it as the observation and does not end the episode).

>>> parse_pyautogui("```python\npyautogui.click(10, 20)\n```").code
'pyautogui.click(10, 20)'
>>> parse_computer13('{"action_type": "PRESS", "parameters": {"key": "enter"}}').code
"pyautogui.press('enter')"
>>> parse_pyautogui("DONE").kind
'DONE'
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from gymnasium import spaces

from agentrl.core.choices import did_you_mean
from agentrl.core.errors import AgentRLError
from agentrl.core.spaces import UnicodeText

__all__ = [
    "ACTION_TYPES",
    "BUTTONS",
    "KEYBOARD_KEYS",
    "MAX_CODE_CHARS",
    "MAX_HOTKEY_KEYS",
    "MAX_TEXT_CHARS",
    "SCROLL_LIMIT",
    "SPECIAL_ACTIONS",
    "Action",
    "ActionError",
    "computer13_space",
    "from_space_sample",
    "parse_computer13",
    "parse_computer13_many",
    "parse_pyautogui",
    "to_pyautogui",
]

SPECIAL_ACTIONS = ("WAIT", "DONE", "FAIL")
MAX_CODE_CHARS = 64 * 1024
MAX_RESPONSE_CHARS = 4 * MAX_CODE_CHARS
MAX_TEXT_CHARS = 10_000
MAX_HOTKEY_KEYS = 4
MAX_ACTIONS_PER_STEP = 32
SCROLL_LIMIT = 100
DRAG_DURATION_S = 0.3
BUTTONS = ("left", "right", "middle")

# The order of OSWorld's ACTION_SPACE (13 actions, then WAIT, FAIL, DONE): the Discrete(16) indices.
ACTION_TYPES = (
    "MOVE_TO",
    "CLICK",
    "MOUSE_DOWN",
    "MOUSE_UP",
    "RIGHT_CLICK",
    "DOUBLE_CLICK",
    "DRAG_TO",
    "SCROLL",
    "TYPING",
    "PRESS",
    "KEY_DOWN",
    "KEY_UP",
    "HOTKEY",
    "WAIT",
    "FAIL",
    "DONE",
)

_NAMED_KEYS = """
accept add alt altleft altright apps backspace browserback browserfavorites browserforward browserhome
browserrefresh browsersearch browserstop capslock clear convert ctrl ctrlleft ctrlright decimal del delete
divide down end enter esc escape execute f1 f10 f11 f12 f13 f14 f15 f16 f17 f18 f19 f2 f20 f21 f22 f23
f24 f3 f4 f5 f6 f7 f8 f9 final fn hanguel hangul hanja help home insert junja kana kanji launchapp1
launchapp2 launchmail launchmediaselect left modechange multiply nexttrack nonconvert num0 num1 num2 num3
num4 num5 num6 num7 num8 num9 numlock pagedown pageup pause pgdn pgup playpause prevtrack print
printscreen prntscrn prtsc prtscr return right scrolllock select separator shift shiftleft shiftright
sleep stop subtract tab up volumedown volumemute volumeup win winleft winright yen command option
optionleft optionright
""".split()

#: OSWorld's KEYBOARD_KEYS, in its order (the ``key`` Discrete indices): whitespace, printable ASCII
#: without upper-case letters, then pyautogui's key names.
KEYBOARD_KEYS: tuple[str, ...] = (
    "\t",
    "\n",
    "\r",
    " ",
    *(chr(c) for c in range(33, 127) if not chr(c).isupper()),
    *_NAMED_KEYS,
)
_KEY_SET = frozenset(KEYBOARD_KEYS)

# Parameters of each structured action: name -> required.
_PARAMS: dict[str, dict[str, bool]] = {
    "MOVE_TO": {"x": True, "y": True},
    "CLICK": {"button": False, "x": False, "y": False, "num_clicks": False},
    "MOUSE_DOWN": {"button": False},
    "MOUSE_UP": {"button": False},
    "RIGHT_CLICK": {"x": False, "y": False},
    "DOUBLE_CLICK": {"x": False, "y": False},
    "DRAG_TO": {"x": True, "y": True},
    "SCROLL": {"dx": True, "dy": True},
    "TYPING": {"text": True},
    "PRESS": {"key": True},
    "KEY_DOWN": {"key": True},
    "KEY_UP": {"key": True},
    "HOTKEY": {"keys": True},
    "WAIT": {},
    "FAIL": {},
    "DONE": {},
}

_EXAMPLE = '{"action_type": "CLICK", "parameters": {"x": 10, "y": 20}}'
# A fence: an optional language tag ending its line (or python/py/json then a space), the body, ```.
_FENCE = re.compile(r"```(?:[ \t]*[A-Za-z0-9_+-]*[ \t]*\r?\n|[ \t]*(?:python3?|py|json)[ \t]+)?(.*?)```", re.DOTALL)


class ActionError(AgentRLError, ValueError):
    """The agent's action cannot be run; ``str(error)`` is the message to show the agent.

    >>> str(ActionError("unknown key 'entr'; did you mean 'enter'?"))
    "unknown key 'entr'; did you mean 'enter'?"
    """


@dataclass(frozen=True)
class Action:
    """One parsed action.

    Attributes:
        kind: ``"code"`` (run :attr:`code`) or one of ``"WAIT"``, ``"DONE"``, ``"FAIL"``.
        code: the pyautogui code to run (``""`` for the special actions).
        structured: for computer_13 actions, the normalised ``{"action_type", "parameters"}`` (or
            ``{"action_type": "SEQUENCE", "actions": [...]}`` for a list); ``None`` for raw code.

    >>> Action("DONE").is_special, Action("code", "pyautogui.press('a')").is_special
    (True, False)
    """

    kind: Literal["code", "WAIT", "DONE", "FAIL"]
    code: str = ""
    structured: dict[str, Any] | None = field(default=None, hash=False)

    @property
    def is_special(self) -> bool:
        """Whether this is WAIT, DONE or FAIL (nothing to execute)."""
        return self.kind != "code"


# ---------------------------------------------------------------------------------------------- pyautogui


_SPECIAL_KINDS: dict[str, Literal["WAIT", "DONE", "FAIL"]] = {"WAIT": "WAIT", "DONE": "DONE", "FAIL": "FAIL"}


def _special(text: str) -> Literal["WAIT", "DONE", "FAIL"] | None:
    return _SPECIAL_KINDS.get(text.strip().strip("`").strip())


def _split_trailing_special(block: str) -> tuple[str, Literal["WAIT", "DONE", "FAIL"] | None]:
    lines = block.rstrip().splitlines()
    if lines and _special(lines[-1]) is not None and not lines[-1].startswith((" ", "\t")):
        return "\n".join(lines[:-1]).strip(), _special(lines[-1])
    return block.strip(), None


def parse_pyautogui(response: str, *, max_chars: int = MAX_CODE_CHARS) -> Action:
    r"""Parse an agent's pyautogui response: code (raw or fenced) or exactly WAIT / DONE / FAIL.

    Fenced code blocks (```` ```python ````, ```` ``` ````, any language tag) are joined with newlines,
    as OSWorld's ``parse_code_from_string`` does; without fences the whole response is the code.
    A special word alone (or alone in a fence, or on its own line after prose) is that action.

    Raises:
        ActionError: empty code, code over ``max_chars``, code that does not compile (the message
            has the line), or code and a special word in the same response.

    >>> parse_pyautogui("pyautogui.press('enter')")
    Action(kind='code', code="pyautogui.press('enter')", structured=None)
    >>> parse_pyautogui("Saved the file.\n```\nDONE\n```").kind
    'DONE'
    >>> parse_pyautogui("```python\npyautogui.click(1, 2\n```")
    Traceback (most recent call last):
    ...
    agentrl.envs.osworld.actions.ActionError: the code does not compile: line 1: '(' was never closed
    """
    if not isinstance(response, str):
        raise ActionError(f"the action must be a string of Python code, got {type(response).__name__}")
    limit = max(max_chars, 1)
    if len(response) > 4 * limit:  # checked first: regexes and compile() never see huge inputs
        raise ActionError(f"the response is {len(response):,} characters; code is limited to {limit:,} characters")
    whole = _special(response)
    if whole is not None:
        return Action(whole)
    fenced = "```" in response
    if fenced:
        blocks = [m.group(1) for m in _FENCE.finditer(response)]
        if not blocks:  # an unclosed fence (the response was cut off): take what follows its first line
            rest = response.split("```", 1)[1]
            blocks = [rest.split("\n", 1)[1] if "\n" in rest else ""]
    else:
        blocks = [response]
    codes: list[str] = []
    specials: list[str] = []
    for block in blocks:
        word = _special(block)
        if word is not None:
            specials.append(word)
            continue
        code, word = _split_trailing_special(block)
        if code:
            codes.append(code)
        if word is not None:
            specials.append(word)
    code = "\n".join(codes).strip()
    if not fenced and specials and code:
        # Prose then a lone "DONE" line: the prose is not code.
        try:
            compile(code, "<agent>", "exec")
        except (SyntaxError, ValueError):
            code = ""
    if len(set(specials)) > 1:
        raise ActionError(f"answer only one of WAIT, DONE, FAIL; got {', '.join(dict.fromkeys(specials))}")
    if specials and code:
        raise ActionError(
            f"{specials[0]} must be sent alone, not with code; send the code now and {specials[0]} in the next step"
        )
    if specials:
        return Action(specials[0])  # type: ignore[arg-type]
    if not code:
        raise ActionError("the response has no code; write pyautogui code in a ```python block, or WAIT, DONE or FAIL")
    if len(code) > limit:
        raise ActionError(f"the code is {len(code):,} characters; the limit is {limit:,}")
    try:
        compile(code, "<agent>", "exec")
    except SyntaxError as exc:
        raise ActionError(f"the code does not compile: line {exc.lineno}: {exc.msg}") from None
    except ValueError as exc:  # e.g. null bytes
        raise ActionError(f"the code does not compile: {exc}") from None
    return Action("code", code)


# ---------------------------------------------------------------------------------------------- computer_13


def _number(action_type: str, name: str, value: Any, low: float, high: float, *, integer: bool = False) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        kind = "an integer" if integer else "a number"
        raise ActionError(f"{action_type}: {name} must be {kind}, got {value!r}")
    if integer and not float(value).is_integer():
        raise ActionError(f"{action_type}: {name} must be an integer, got {value!r}")
    if not math.isfinite(float(value)) or not low <= value <= high:
        raise ActionError(f"{action_type}: {name}={value!r} is out of range; it must be from {low:g} to {high:g}")
    if integer or float(value).is_integer():
        return int(value)
    return float(value)


def _key(action_type: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ActionError(f"{action_type}: a key must be a non-empty string, got {value!r}")
    key = value.lower() if len(value) > 1 else value  # pyautogui lower-cases key names
    if len(key) == 1 and "A" <= key <= "Z":  # pyautogui presses shift+letter; OSWorld's list omits them
        return key
    if key not in _KEY_SET:
        named = [k for k in KEYBOARD_KEYS if len(k) > 1]
        raise ActionError(f"{action_type}: unknown key {value!r}{did_you_mean(key, named)}")
    return key


def _validate(action: Any, screen: tuple[int, int], max_text: int) -> dict[str, Any]:
    if not isinstance(action, Mapping):
        raise ActionError(
            'each action must be a JSON object like {"action_type": "CLICK", "parameters": {...}}, '
            f"got {action!r:.80}"
        )
    extra = set(action) - {"action_type", "parameters"}
    if extra:
        raise ActionError(f"unexpected field(s) {', '.join(sorted(map(str, extra)))}; use action_type and parameters")
    action_type = action.get("action_type")
    if not isinstance(action_type, str):
        raise ActionError(f"action_type is missing or not a string; choose from: {', '.join(ACTION_TYPES)}")
    action_type = action_type.strip().upper()
    if action_type not in _PARAMS:
        raise ActionError(
            f"unknown action_type {action.get('action_type')!r}; choose from: {', '.join(ACTION_TYPES)}"
            f"{did_you_mean(action_type, ACTION_TYPES)}"
        )
    params = action.get("parameters") or {}
    if not isinstance(params, Mapping):
        raise ActionError(f"{action_type}: parameters must be a JSON object, got {params!r:.80}")
    spec = _PARAMS[action_type]
    unknown = [str(k) for k in params if k not in spec]
    if unknown:
        allowed = ", ".join(spec) or "none"
        raise ActionError(f"{action_type}: unknown parameter(s) {', '.join(unknown)}; expected: {allowed}")
    missing = [name for name, required in spec.items() if required and params.get(name) is None]
    if missing:
        raise ActionError(f"{action_type}: missing parameter(s) {', '.join(missing)}")
    width, height = screen
    out: dict[str, Any] = {}
    if ("x" in spec) and ((params.get("x") is None) != (params.get("y") is None)):
        raise ActionError(f"{action_type}: give x and y together, or neither")
    for name, value in params.items():
        if value is None:
            continue
        if name == "x":
            out[name] = _number(action_type, name, value, 0, width - 1)
        elif name == "y":
            out[name] = _number(action_type, name, value, 0, height - 1)
        elif name in ("dx", "dy"):
            out[name] = _number(action_type, name, value, -SCROLL_LIMIT, SCROLL_LIMIT, integer=True)
        elif name == "num_clicks":
            out[name] = _number(action_type, name, value, 1, 3, integer=True)
        elif name == "button":
            if value not in BUTTONS:
                raise ActionError(
                    f"{action_type}: unknown button {value!r}; choose from: {', '.join(BUTTONS)}"
                    f"{did_you_mean(value, BUTTONS)}"
                )
            out[name] = value
        elif name == "text":
            if not isinstance(value, str):
                raise ActionError(f"{action_type}: text must be a string, got {type(value).__name__}")
            if len(value) > max_text:
                raise ActionError(
                    f"{action_type}: text is {len(value):,} characters; the limit is {max_text:,} (type it in parts)"
                )
            out[name] = value
        elif name == "key":
            out[name] = _key(action_type, value)
        elif name == "keys":
            if isinstance(value, str) or not isinstance(value, Sequence) or not value:
                raise ActionError(f'{action_type}: keys must be a non-empty list like ["ctrl", "c"], got {value!r:.80}')
            if len(value) > MAX_HOTKEY_KEYS:
                raise ActionError(f"{action_type}: at most {MAX_HOTKEY_KEYS} keys, got {len(value)}")
            out[name] = [_key(action_type, k) for k in value]
    return {"action_type": action_type, "parameters": out}


def _load(action: str | Mapping[str, Any] | Sequence[Any]) -> Any:
    if not isinstance(action, str):
        return action
    text = action.strip()
    if len(text) > MAX_RESPONSE_CHARS:
        raise ActionError(f"the action is {len(text):,} characters; the limit is {MAX_RESPONSE_CHARS:,}")
    if _special(text) is not None:
        return {"action_type": _special(text)}
    if "```" in text:
        blocks = [m.group(1).strip() for m in _FENCE.finditer(text)]
        if len(blocks) == 1:
            text = blocks[0]
        elif blocks:
            text = "[" + ",".join(blocks) + "]"
        if _special(text) is not None:
            return {"action_type": _special(text)}
    if not text:
        raise ActionError(f"the action is empty; send JSON like {_EXAMPLE}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ActionError(
            f"the action is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            f"send JSON like {_EXAMPLE}"
        ) from None
    except RecursionError:
        raise ActionError("the action JSON is nested too deeply") from None


def parse_computer13_many(
    action: str | Mapping[str, Any] | Sequence[Any],
    screen: tuple[int, int] = (1920, 1080),
    *,
    max_text: int = MAX_TEXT_CHARS,
) -> list[Action]:
    """Parse one computer_13 action or a list of them (JSON text, a Mapping, or a list) into Actions.

    >>> [a.kind for a in parse_computer13_many('[{"action_type": "CLICK"}, {"action_type": "DONE"}]')]
    ['code', 'DONE']
    """
    loaded = _load(action)
    items = list(loaded) if isinstance(loaded, Sequence) and not isinstance(loaded, (str, bytes, Mapping)) else [loaded]
    if not items:
        raise ActionError("the action list is empty")
    if len(items) > MAX_ACTIONS_PER_STEP:
        raise ActionError(f"{len(items)} actions in one step; the limit is {MAX_ACTIONS_PER_STEP}")
    out = []
    for i, item in enumerate(items):
        try:
            normal = _validate(item, (int(screen[0]), int(screen[1])), max_text)
        except ActionError as exc:
            if len(items) > 1:
                raise ActionError(f"action {i + 1} of {len(items)}: {exc}") from None
            raise
        kind = normal["action_type"]
        if kind in SPECIAL_ACTIONS:
            out.append(Action(kind, "", normal))
        else:
            out.append(Action("code", _code(normal), normal))
    return out


def parse_computer13(
    action: str | Mapping[str, Any] | Sequence[Any],
    screen: tuple[int, int] = (1920, 1080),
    *,
    max_text: int = MAX_TEXT_CHARS,
) -> Action:
    """Parse a computer_13 action: JSON ``{"action_type": ..., "parameters": {...}}`` text or a Mapping.

    Coordinates must lie on the ``screen`` (``(width, height)``), buttons in :data:`BUTTONS`, keys in
    :data:`KEYBOARD_KEYS` (names case-insensitive; single upper-case letters are also allowed), text
    at most ``max_text`` characters. The text may be fenced (```` ```json ````) or be exactly WAIT,
    DONE or FAIL. A JSON list of several actions becomes one code Action
    (``structured={"action_type": "SEQUENCE", "actions": [...]}``); WAIT, DONE and FAIL must then be
    sent alone (use :func:`parse_computer13_many` to get them as separate Actions).

    >>> parse_computer13({"action_type": "CLICK", "parameters": {"x": 5, "y": 7, "num_clicks": 2}}).code
    "pyautogui.click(x=5, y=7, clicks=2, button='left')"
    >>> parse_computer13({"action_type": "PRESS", "parameters": {"key": "entr"}})
    Traceback (most recent call last):
    ...
    agentrl.envs.osworld.actions.ActionError: PRESS: unknown key 'entr'; did you mean 'enter'?
    >>> parse_computer13('{"action_type": "MOVE_TO", "parameters": {"x": 2000, "y": 5}}', screen=(1280, 720))
    Traceback (most recent call last):
    ...
    agentrl.envs.osworld.actions.ActionError: MOVE_TO: x=2000 is out of range; it must be from 0 to 1279
    """
    actions = parse_computer13_many(action, screen, max_text=max_text)
    if len(actions) == 1:
        return actions[0]
    specials = [a.kind for a in actions if a.is_special]
    if specials:
        raise ActionError(f"{specials[0]} must be sent alone, not in a list with other actions")
    structured = {"action_type": "SEQUENCE", "actions": [a.structured for a in actions]}
    return Action("code", "\n".join(a.code for a in actions), structured)


def _code(normal: Mapping[str, Any]) -> str:
    kind = normal["action_type"]
    p = normal.get("parameters") or {}
    xy = [f"x={p['x']!r}", f"y={p['y']!r}"] if p.get("x") is not None else []
    button = p.get("button", "left")
    if kind == "MOVE_TO":
        return f"pyautogui.moveTo({p['x']!r}, {p['y']!r})"
    if kind == "CLICK":
        args = [*xy, *([f"clicks={p['num_clicks']!r}"] if p.get("num_clicks") else []), f"button={button!r}"]
        return f"pyautogui.click({', '.join(args)})"
    if kind == "MOUSE_DOWN":
        return f"pyautogui.mouseDown(button={button!r})"
    if kind == "MOUSE_UP":
        return f"pyautogui.mouseUp(button={button!r})"
    if kind == "RIGHT_CLICK":
        return f"pyautogui.rightClick({', '.join(xy)})"
    if kind == "DOUBLE_CLICK":
        return f"pyautogui.doubleClick({', '.join(xy)})"
    if kind == "DRAG_TO":
        return f"pyautogui.dragTo({p['x']!r}, {p['y']!r}, duration={DRAG_DURATION_S!r}, button='left')"
    if kind == "SCROLL":
        lines = []
        if p.get("dy"):
            lines.append(f"pyautogui.scroll({p['dy']!r})")
        if p.get("dx"):
            lines.append(f"pyautogui.hscroll({p['dx']!r})")
        return "\n".join(lines) or "pass"
    if kind == "TYPING":
        return f"pyautogui.write({p['text']!r}, interval=0)"
    if kind == "PRESS":
        return f"pyautogui.press({p['key']!r})"
    if kind == "KEY_DOWN":
        return f"pyautogui.keyDown({p['key']!r})"
    if kind == "KEY_UP":
        return f"pyautogui.keyUp({p['key']!r})"
    if kind == "HOTKEY":
        return f"pyautogui.hotkey({', '.join(map(repr, p['keys']))})"
    if kind in SPECIAL_ACTIONS:
        return ""
    raise ActionError(f"unknown action_type {kind!r}")


def to_pyautogui(action: Action | Mapping[str, Any], screen: tuple[int, int] = (1920, 1080)) -> str:
    r"""The pyautogui code for an action (``""`` for WAIT, DONE, FAIL).

    A computer_13 :class:`Action` (or a raw Mapping, validated against ``screen`` first) becomes
    code from its ``structured`` form; a raw-code Action returns its code.

    >>> to_pyautogui({"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "c"]}})
    "pyautogui.hotkey('ctrl', 'c')"
    >>> to_pyautogui({"action_type": "TYPING", "parameters": {"text": "hi\n"}})
    "pyautogui.write('hi\\n', interval=0)"
    """
    if isinstance(action, Action):
        if action.is_special:
            return ""
        if action.structured is None:
            return action.code
        if action.structured.get("action_type") == "SEQUENCE":
            return "\n".join(_code(a) for a in action.structured["actions"])
        return _code(action.structured)
    return parse_computer13(action, screen).code


# ---------------------------------------------------------------------------------------------- the space


def computer13_space(width: int, height: int, *, max_text: int = MAX_TEXT_CHARS) -> spaces.Dict:
    """The computer_13 action space as a gymnasium ``Dict`` (every sample is a valid action).

    Keys: ``action_type`` Discrete(16) (indices of :data:`ACTION_TYPES`), ``x`` Discrete(width),
    ``y`` Discrete(height), ``use_xy`` Discrete(2) (0: CLICK/RIGHT_CLICK/DOUBLE_CLICK at the current
    pointer), ``button`` Discrete(3) (:data:`BUTTONS`), ``num_clicks`` Discrete(3, start=1),
    ``dx``/``dy`` integer Box of shape (1,) in ``[-SCROLL_LIMIT, SCROLL_LIMIT]``, ``text`` UnicodeText(max_text),
    ``key`` Discrete(len(KEYBOARD_KEYS)), ``keys`` MultiDiscrete of MAX_HOTKEY_KEYS key indices with
    ``num_keys`` Discrete(MAX_HOTKEY_KEYS, start=1) of them used (HOTKEY).

    >>> space = computer13_space(1280, 720)
    >>> int(space["action_type"].n), int(space["x"].n), int(space["key"].n) == len(KEYBOARD_KEYS)
    (16, 1280, True)
    """
    n_keys = len(KEYBOARD_KEYS)
    return spaces.Dict(
        {
            "action_type": spaces.Discrete(len(ACTION_TYPES)),
            "x": spaces.Discrete(int(width)),
            "y": spaces.Discrete(int(height)),
            "use_xy": spaces.Discrete(2),
            "button": spaces.Discrete(len(BUTTONS)),
            "num_clicks": spaces.Discrete(3, start=1),
            "dx": spaces.Box(-SCROLL_LIMIT, SCROLL_LIMIT, shape=(1,), dtype=np.int64),
            "dy": spaces.Box(-SCROLL_LIMIT, SCROLL_LIMIT, shape=(1,), dtype=np.int64),
            "text": UnicodeText(int(max_text)),
            "key": spaces.Discrete(n_keys),
            "keys": spaces.MultiDiscrete([n_keys] * MAX_HOTKEY_KEYS),
            "num_keys": spaces.Discrete(MAX_HOTKEY_KEYS, start=1),
        }
    )


def _index(sample: Mapping[str, Any], name: str, size: int) -> int:
    value = sample.get(name)
    if value is None:
        raise ActionError(f"the sample has no {name!r}")
    try:
        index = int(np.asarray(value).reshape(-1)[0])
    except (TypeError, ValueError, IndexError):
        raise ActionError(f"{name} must be an integer index, got {value!r:.80}") from None
    if not 0 <= index < size:
        raise ActionError(f"{name}={index} is out of range 0..{size - 1}")
    return index


def from_space_sample(
    sample: Mapping[str, Any], screen: tuple[int, int] = (1920, 1080), *, max_text: int = MAX_TEXT_CHARS
) -> Action:
    """Convert a :func:`computer13_space` sample to an :class:`Action` (validated like JSON actions).

    >>> space = computer13_space(640, 480)
    >>> sample = space.sample()
    >>> sample.update(action_type=ACTION_TYPES.index("CLICK"), x=3, y=4, use_xy=1, button=0, num_clicks=1)
    >>> from_space_sample(sample, (640, 480)).code
    "pyautogui.click(x=3, y=4, clicks=1, button='left')"
    """
    if not isinstance(sample, Mapping):
        raise ActionError(f"a computer_13 space sample is a dict, got {type(sample).__name__}")
    kind = ACTION_TYPES[_index(sample, "action_type", len(ACTION_TYPES))]
    spec = _PARAMS[kind]
    params: dict[str, Any] = {}
    for name in spec:
        if name in ("x", "y"):
            if not spec[name] and not int(np.asarray(sample.get("use_xy", 1)).reshape(-1)[0]):
                continue
            value = np.asarray(sample.get(name)).reshape(-1)
            params[name] = int(value[0]) if value.size else None
        elif name == "button":
            params[name] = BUTTONS[_index(sample, "button", len(BUTTONS))]
        elif name == "num_clicks":
            params[name] = _index(sample, "num_clicks", 4) or 1
        elif name in ("dx", "dy"):
            params[name] = int(np.asarray(sample.get(name)).reshape(-1)[0])
        elif name == "text":
            params[name] = sample.get("text")
        elif name == "key":
            params[name] = KEYBOARD_KEYS[_index(sample, "key", len(KEYBOARD_KEYS))]
        elif name == "keys":
            count = _index(sample, "num_keys", MAX_HOTKEY_KEYS + 1) or 1
            indices = np.asarray(sample.get("keys")).reshape(-1)[:count]
            if any(not 0 <= int(i) < len(KEYBOARD_KEYS) for i in indices):
                raise ActionError(f"keys indices must be in 0..{len(KEYBOARD_KEYS) - 1}, got {indices.tolist()}")
            params[name] = [KEYBOARD_KEYS[int(i)] for i in indices]
    return parse_computer13({"action_type": kind, "parameters": params}, screen, max_text=max_text)
