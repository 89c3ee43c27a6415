"""OSWorld action spaces: pyautogui code parsing, computer_13 validation, the Dict space, code generation."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from agentrl.core.spaces import UnicodeText
from agentrl.envs.osworld.actions import (
    ACTION_TYPES,
    KEYBOARD_KEYS,
    MAX_CODE_CHARS,
    MAX_TEXT_CHARS,
    Action,
    ActionError,
    computer13_space,
    from_space_sample,
    parse_computer13,
    parse_computer13_many,
    parse_pyautogui,
    to_pyautogui,
)

SCREEN = (1280, 720)


# ------------------------------------------------------------------ pyautogui


def test_raw_code() -> None:
    action = parse_pyautogui("import time\npyautogui.click(10, 20)\n")
    assert action == Action("code", "import time\npyautogui.click(10, 20)")
    assert not action.is_special and action.structured is None


@pytest.mark.parametrize(
    "response",
    [
        "```python\npyautogui.click(1, 2)\n```",
        "```py\npyautogui.click(1, 2)\n```",
        "```\npyautogui.click(1, 2)\n```",
        "I will click.\n```python\npyautogui.click(1, 2)\n```\nThat should work.",
        "```python pyautogui.click(1, 2)```",
    ],
)
def test_fenced_code(response: str) -> None:
    assert parse_pyautogui(response).code == "pyautogui.click(1, 2)"


def test_several_fences_are_joined() -> None:
    response = "First:\n```python\nx = 1\n```\nthen\n```python\npyautogui.moveTo(x, 2)\n```"
    assert parse_pyautogui(response).code == "x = 1\npyautogui.moveTo(x, 2)"


def test_unclosed_fence_takes_the_rest() -> None:
    assert parse_pyautogui("```python\npyautogui.press('a')\n").code == "pyautogui.press('a')"


@pytest.mark.parametrize("word", ["WAIT", "DONE", "FAIL"])
@pytest.mark.parametrize(
    "template",
    ["{w}", "  {w}\n", "```{w}```", "```\n{w}\n```", "The task is complete.\n{w}", "Explanation.\n```\n{w}\n```"],
)
def test_special_actions(word: str, template: str) -> None:
    action = parse_pyautogui(template.format(w=word))
    assert action.kind == word and action.code == "" and action.is_special


def test_special_words_are_case_sensitive_and_exact() -> None:
    # "done" is a (harmless) Python name, not the DONE action: OSWorld matches the exact words.
    with pytest.raises(ActionError, match="compile"):
        parse_pyautogui("I am done now")
    assert parse_pyautogui("done = True").kind == "code"


def test_code_and_special_together_is_an_error() -> None:
    with pytest.raises(ActionError, match="DONE must be sent alone"):
        parse_pyautogui("```python\npyautogui.click(1, 2)\n```\n```\nDONE\n```")
    with pytest.raises(ActionError, match="DONE must be sent alone"):
        parse_pyautogui("```python\npyautogui.click(1, 2)\nDONE\n```")
    with pytest.raises(ActionError, match="only one of"):
        parse_pyautogui("```DONE```\n```FAIL```")


@pytest.mark.parametrize("response", ["", "   \n", "```python\n```", "```\n\n```", "Just prose, no code fences."])
def test_empty_or_prose_is_an_error(response: str) -> None:
    with pytest.raises(ActionError):
        parse_pyautogui(response)


def test_syntax_error_has_the_line() -> None:
    with pytest.raises(ActionError, match=r"does not compile: line 2: "):
        parse_pyautogui("pyautogui.click(1, 2)\nif True print(1)")
    with pytest.raises(ActionError, match="does not compile"):
        parse_pyautogui("x = '\x00'\x00")


def test_huge_code_is_rejected_quickly() -> None:
    started = time.monotonic()
    with pytest.raises(ActionError, match="limit"):
        parse_pyautogui("pyautogui.write('" + "a" * 1_000_000 + "')")
    with pytest.raises(ActionError, match="limit"):
        parse_pyautogui("`" * 1_000_000)
    with pytest.raises(ActionError, match="limit"):
        parse_pyautogui("```python\n" + "x = 1\n" * (MAX_CODE_CHARS // 6 + 10) + "```")
    assert time.monotonic() - started < 1.0
    assert parse_pyautogui("x = 1\n" * 1000).kind == "code"


def test_non_string_is_an_error() -> None:
    with pytest.raises(ActionError, match="string"):
        parse_pyautogui(None)  # type: ignore[arg-type]


# ------------------------------------------------------------------ computer_13


def test_keyboard_keys_match_osworld() -> None:
    assert len(KEYBOARD_KEYS) == len(set(KEYBOARD_KEYS))
    assert KEYBOARD_KEYS[:5] == ("\t", "\n", "\r", " ", "!")
    assert {"enter", "ctrl", "f24", "a", "0", "~", "optionright", "prtscr"} <= set(KEYBOARD_KEYS)
    assert "A" not in KEYBOARD_KEYS and KEYBOARD_KEYS[-1] == "optionright"
    assert len(ACTION_TYPES) == 16 and ACTION_TYPES[-3:] == ("WAIT", "FAIL", "DONE")


@pytest.mark.parametrize(
    ("action", "code"),
    [
        ({"action_type": "MOVE_TO", "parameters": {"x": 10, "y": 20}}, "pyautogui.moveTo(10, 20)"),
        ({"action_type": "CLICK"}, "pyautogui.click(button='left')"),
        (
            {"action_type": "CLICK", "parameters": {"button": "right", "x": 1.5, "y": 2}},
            "pyautogui.click(x=1.5, y=2, button='right')",
        ),
        ({"action_type": "MOUSE_DOWN", "parameters": {}}, "pyautogui.mouseDown(button='left')"),
        ({"action_type": "MOUSE_UP", "parameters": {"button": "middle"}}, "pyautogui.mouseUp(button='middle')"),
        ({"action_type": "RIGHT_CLICK", "parameters": {"x": 3, "y": 4}}, "pyautogui.rightClick(x=3, y=4)"),
        ({"action_type": "DOUBLE_CLICK"}, "pyautogui.doubleClick()"),
        (
            {"action_type": "DRAG_TO", "parameters": {"x": 5, "y": 6}},
            "pyautogui.dragTo(5, 6, duration=0.3, button='left')",
        ),
        ({"action_type": "SCROLL", "parameters": {"dx": 0, "dy": -3}}, "pyautogui.scroll(-3)"),
        ({"action_type": "SCROLL", "parameters": {"dx": 2, "dy": 0}}, "pyautogui.hscroll(2)"),
        ({"action_type": "SCROLL", "parameters": {"dx": 0, "dy": 0}}, "pass"),
        (
            {"action_type": "TYPING", "parameters": {"text": 'it\'s "x"\n'}},
            "pyautogui.write('it\\'s \"x\"\\n', interval=0)",
        ),
        ({"action_type": "PRESS", "parameters": {"key": "Enter"}}, "pyautogui.press('enter')"),
        ({"action_type": "KEY_DOWN", "parameters": {"key": "shift"}}, "pyautogui.keyDown('shift')"),
        ({"action_type": "KEY_UP", "parameters": {"key": "A"}}, "pyautogui.keyUp('A')"),
        (
            {"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "shift", "t"]}},
            "pyautogui.hotkey('ctrl', 'shift', 't')",
        ),
    ],
)
def test_each_structured_action(action: dict, code: str) -> None:  # type: ignore[type-arg]
    parsed = parse_computer13(action, SCREEN)
    assert parsed.kind == "code" and parsed.code == code
    assert parsed.structured is not None and parsed.structured["action_type"] == action["action_type"]
    assert to_pyautogui(parsed) == code
    assert parse_computer13(json.dumps(action), SCREEN) == parsed
    compile(code, "<test>", "exec")


@pytest.mark.parametrize("word", ["WAIT", "DONE", "FAIL"])
def test_computer13_specials(word: str) -> None:
    for form in (word, {"action_type": word}, json.dumps({"action_type": word, "parameters": {}}), f"```{word}```"):
        action = parse_computer13(form, SCREEN)
        assert action.kind == word and to_pyautogui(action) == ""


def test_fenced_json_and_lists() -> None:
    text = '```json\n{"action_type": "PRESS", "parameters": {"key": "tab"}}\n```'
    assert parse_computer13(text).code == "pyautogui.press('tab')"
    listed = json.dumps(
        [
            {"action_type": "CLICK", "parameters": {"x": 1, "y": 1}},
            {"action_type": "TYPING", "parameters": {"text": "hi"}},
        ]
    )
    action = parse_computer13(listed, SCREEN)
    assert action.code == "pyautogui.click(x=1, y=1, button='left')\npyautogui.write('hi', interval=0)"
    assert action.structured is not None and action.structured["action_type"] == "SEQUENCE"
    assert to_pyautogui(action) == action.code
    many = parse_computer13_many(json.dumps([{"action_type": "CLICK"}, {"action_type": "DONE"}]))
    assert [a.kind for a in many] == ["code", "DONE"]
    with pytest.raises(ActionError, match="DONE must be sent alone"):
        parse_computer13(json.dumps([{"action_type": "CLICK"}, {"action_type": "DONE"}]))
    with pytest.raises(ActionError, match="action 2 of 2: PRESS: unknown key"):
        parse_computer13(json.dumps([{"action_type": "CLICK"}, {"action_type": "PRESS", "parameters": {"key": "x1"}}]))
    with pytest.raises(ActionError, match="empty"):
        parse_computer13("[]")


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (
            {"action_type": "MOVE_TO", "parameters": {"x": 1280, "y": 0}},
            "x=1280 is out of range; it must be from 0 to 1279",
        ),
        ({"action_type": "MOVE_TO", "parameters": {"x": 0, "y": -1}}, "y=-1 is out of range"),
        ({"action_type": "MOVE_TO", "parameters": {"x": float("nan"), "y": 1}}, "x=nan is out of range"),
        ({"action_type": "MOVE_TO", "parameters": {"x": "10", "y": 1}}, "x must be a number"),
        ({"action_type": "MOVE_TO", "parameters": {"x": True, "y": 1}}, "x must be a number"),
        ({"action_type": "MOVE_TO", "parameters": {"x": 1}}, "missing parameter"),
        ({"action_type": "CLICK", "parameters": {"x": 1}}, "give x and y together"),
        ({"action_type": "CLICK", "parameters": {"num_clicks": 4}}, "num_clicks=4 is out of range"),
        ({"action_type": "CLICK", "parameters": {"num_clicks": 1.5}}, "num_clicks must be an integer"),
        (
            {"action_type": "CLICK", "parameters": {"button": "lef"}},
            "unknown button 'lef'; choose from: left, right, middle; did you mean 'left'?",
        ),
        ({"action_type": "CLICK", "parameters": {"clicks": 2}}, "unknown parameter(s) clicks"),
        ({"action_type": "SCROLL", "parameters": {"dx": 0, "dy": 10_000}}, "dy=10000 is out of range"),
        ({"action_type": "TYPING", "parameters": {"text": 5}}, "text must be a string"),
        ({"action_type": "PRESS", "parameters": {"key": "entr"}}, "unknown key 'entr'; did you mean 'enter'?"),
        ({"action_type": "PRESS", "parameters": {"key": ""}}, "non-empty string"),
        ({"action_type": "HOTKEY", "parameters": {"keys": "ctrl+c"}}, "keys must be a non-empty list"),
        ({"action_type": "HOTKEY", "parameters": {"keys": []}}, "missing parameter|non-empty list"),
        ({"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "escp"]}}, "unknown key 'escp'"),
        ({"action_type": "HOTKEY", "parameters": {"keys": ["a"] * 9}}, "at most 4 keys"),
        ({"action_type": "CLIK"}, "unknown action_type 'CLIK'.*did you mean 'CLICK'"),
        ({"parameters": {}}, "action_type is missing"),
        ({"action_type": "CLICK", "parameters": [1, 2]}, "parameters must be a JSON object"),
        ({"action_type": "CLICK", "params": {}}, "unexpected field"),
        ("not json at all", "not valid JSON"),
        ('{"action_type": "CLICK", ', "not valid JSON .* line 1 column"),
        ("", "empty"),
        ("42", "must be a JSON object"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply|not valid JSON|limit"),
    ],
)
def test_computer13_errors(action: object, message: str) -> None:
    with pytest.raises(ActionError, match=message.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
        parse_computer13(action, SCREEN)  # type: ignore[arg-type]


def test_keys_are_case_insensitive_for_names_only() -> None:
    code = parse_computer13({"action_type": "PRESS", "parameters": {"key": "PageDown"}}).code
    assert code == "pyautogui.press('pagedown')"
    assert parse_computer13({"action_type": "PRESS", "parameters": {"key": "Z"}}).code == "pyautogui.press('Z')"
    with pytest.raises(ActionError, match="unknown key 'É'"):
        parse_computer13({"action_type": "PRESS", "parameters": {"key": "É"}})


def test_big_text() -> None:
    ok = parse_computer13({"action_type": "TYPING", "parameters": {"text": "é" * MAX_TEXT_CHARS}})
    compile(ok.code, "<test>", "exec")
    started = time.monotonic()
    with pytest.raises(ActionError, match="limit"):
        parse_computer13({"action_type": "TYPING", "parameters": {"text": "a" * 1_000_000}})
    with pytest.raises(ActionError, match="limit"):
        parse_computer13(json.dumps({"action_type": "TYPING", "parameters": {"text": "a" * 1_000_000}}))
    assert time.monotonic() - started < 1.0


def test_to_pyautogui_of_raw_code_and_mapping() -> None:
    assert to_pyautogui(parse_pyautogui("pyautogui.press('a')")) == "pyautogui.press('a')"
    assert to_pyautogui({"action_type": "PRESS", "parameters": {"key": "esc"}}) == "pyautogui.press('esc')"
    with pytest.raises(ActionError):
        to_pyautogui({"action_type": "PRESS", "parameters": {"key": "nope"}})


# ------------------------------------------------------------------ the Dict space


def test_space_layout() -> None:
    space = computer13_space(*SCREEN)
    assert space["action_type"].n == 16
    assert space["x"].n == 1280 and space["y"].n == 720
    assert space["button"].n == 3 and space["key"].n == len(KEYBOARD_KEYS)
    assert isinstance(space["text"], UnicodeText) and space["text"].max_length == MAX_TEXT_CHARS
    assert space["text"].contains("Grüße, 世界")


def test_space_samples_round_trip() -> None:
    space = computer13_space(*SCREEN)
    space.seed(1234)
    seen = set()
    for _ in range(200):
        sample = space.sample()
        assert space.contains(sample)
        try:
            action = from_space_sample(sample, SCREEN)
        except ActionError:
            continue
        seen.add(ACTION_TYPES[int(sample["action_type"])])
        code = to_pyautogui(action)
        compile(code, "<sample>", "exec")
        if action.is_special:
            assert code == "" and action.kind == ACTION_TYPES[int(sample["action_type"])]
        else:
            assert code == action.code
            assert parse_computer13(action.structured, SCREEN) == action  # type: ignore[arg-type]
    assert len(seen) >= 14


def test_from_space_sample_specifics() -> None:
    space = computer13_space(*SCREEN)
    sample = space.sample()
    sample.update(
        action_type=ACTION_TYPES.index("HOTKEY"),
        keys=np.array([KEYBOARD_KEYS.index("ctrl"), KEYBOARD_KEYS.index("c"), 0, 0]),
        num_keys=2,
    )
    assert from_space_sample(sample, SCREEN).code == "pyautogui.hotkey('ctrl', 'c')"
    sample.update(action_type=ACTION_TYPES.index("DOUBLE_CLICK"), use_xy=0)
    assert from_space_sample(sample, SCREEN).code == "pyautogui.doubleClick()"
    sample.update(action_type=ACTION_TYPES.index("MOVE_TO"), x=2000, y=3)
    with pytest.raises(ActionError, match="out of range"):
        from_space_sample(sample, SCREEN)
    sample.update(action_type=99)
    with pytest.raises(ActionError, match="action_type=99 is out of range"):
        from_space_sample(sample, SCREEN)
    with pytest.raises(ActionError):
        from_space_sample("CLICK", SCREEN)  # type: ignore[arg-type]
