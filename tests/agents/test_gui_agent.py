"""The OSWorld GUI agent: prompts, action extraction and validation, grounding, vision parts (no desktop)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from agentrl.agents.gui_agent import (
    COMPUTER13_HELP,
    GUIAgent,
    Widget,
    extract_action,
    ground,
    parse_a11y_table,
    trim_table,
)
from agentrl.agents.registry import AgentSpec
from agentrl.envs.osworld.actions import ACTION_TYPES, ActionError, parse_computer13, parse_pyautogui
from agentrl.llm.base import Generation

HEADER = "tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)"
TABLE = "\n".join(
    [
        HEADER,
        'menu\tFile\t""\t\t\t(0, 25)\t(40, 20)',
        'push-button\tSave As\t""\t\t\t(300, 200)\t(100, 40)',
        'push-button\tSave\t""\t\t\t(400, 600)\t(80, 30)',
        'label\t\t"Unsaved changes"\t\t\t(10, 100)\t(200, 20)',
    ]
)


class Scripted:
    """A fake backend: answers the canned replies in turn (the last one forever) and records requests."""

    def __init__(self, *replies: str, name: str = "scripted-vlm") -> None:
        self.name = name
        self.replies = list(replies)
        self.calls: list[list[dict[str, Any]]] = []
        self.configs: list[Any] = []

    def generate(self, messages: Any, config: Any) -> Generation:
        self.calls.append(list(messages))
        self.configs.append(config)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return Generation(reply)

    def count_tokens(self, messages: Any) -> int:
        return 0

    def close(self) -> None:
        pass


def fake_env(action_mode: str = "pyautogui", width: int = 1280, height: int = 720) -> Any:
    return SimpleNamespace(unwrapped=SimpleNamespace(action_mode=action_mode, width=width, height=height))


def make_agent(*replies: str, action_mode: str = "pyautogui", **kwargs: Any) -> tuple[GUIAgent, Scripted]:
    backend = Scripted(*replies, name=kwargs.pop("backend_name", "scripted-vlm"))
    agent = GUIAgent(backend, **kwargs)
    agent.bind(fake_env(action_mode))
    agent.reset({})
    return agent, backend


def observation(*, screenshot: bool = True, tree: str | None = TABLE) -> dict[str, Any]:
    obs: dict[str, Any] = {"instruction": "Save the document."}
    if screenshot:
        obs["screenshot"] = np.zeros((720, 1280, 3), np.uint8)
    if tree is not None:
        obs["accessibility_tree"] = tree
    return obs


INFO = {"step": 0, "steps_left": 15, "action_error": None}


def system_text(backend: Scripted, call: int = -1) -> str:
    return backend.calls[call][0]["content"]


def user_content(backend: Scripted, call: int = -1) -> Any:
    return backend.calls[call][-1]["content"]


# -- prompts -----------------------------------------------------------------------------------


def test_prompt_has_screen_size_and_pyautogui_format() -> None:
    agent, backend = make_agent("Thought: x\nAction: WAIT")
    agent.act(observation(), INFO)
    system = system_text(backend)
    assert "1280x720" in system and "0 to 1279" in system and "0 to 719" in system
    assert "```python" in system and "pyautogui" in system
    assert "WAIT" in system and "DONE" in system and "FAIL" in system
    assert "Thought:" in system and "Action:" in system
    assert 'click("<name>")' in system  # the tree has positions: grounding is offered


def test_prompt_lists_computer13_action_types() -> None:
    agent, backend = make_agent("Action: WAIT", action_mode="computer_13")
    agent.act(observation(), INFO)
    system = system_text(backend)
    assert '"action_type"' in system and '"parameters"' in system
    assert all(kind in system for kind in ACTION_TYPES)
    assert tuple(COMPUTER13_HELP) == ACTION_TYPES


def test_turn_text_has_instruction_step_and_last_error() -> None:
    agent, backend = make_agent("Action: WAIT")
    agent.act(observation(), {"step": 3, "steps_left": 12, "action_error": "NameError: name 'x' is not defined"})
    text = user_content(backend)[0]["text"]
    assert "Save the document." in text and "Step 1." in text and "Steps left: 12" in text
    assert "NameError" in text and "Accessibility tree:" in text and "Save As" in text


# -- parsing -----------------------------------------------------------------------------------


def test_fenced_code_is_parsed() -> None:
    reply = "Thought: click Save.\nAction:\n```python\nimport pyautogui\npyautogui.click(440, 615)\n```"
    agent, _ = make_agent(reply)
    action = agent.act(observation(), INFO)
    assert action == "import pyautogui\npyautogui.click(440, 615)"
    assert parse_pyautogui(action).kind == "code" and agent.parse_failures == 0 and agent.retries == 0


def test_unfenced_code_lines_are_picked_out_of_prose() -> None:
    assert (
        extract_action("I will press enter.\npyautogui.press('enter')\nThat should do.") == "pyautogui.press('enter')"
    )


@pytest.mark.parametrize("reply", ["DONE", "Thought: finished.\nAction: DONE", "Action: `done`.", "```\nDONE\n```"])
def test_special_words(reply: str) -> None:
    assert extract_action(reply) == "DONE"
    assert extract_action(reply, "computer_13") == "DONE"


def test_computer13_json_is_parsed_and_normalised() -> None:
    reply = 'Thought: click it.\nAction: {"action_type": "click", "parameters": {"x": 440, "y": 615}}'
    agent, _ = make_agent(reply, action_mode="computer_13")
    action = agent.act(observation(), INFO)
    assert json.loads(action) == {"action_type": "CLICK", "parameters": {"x": 440, "y": 615}}
    assert parse_computer13(action, (1280, 720)).code == "pyautogui.click(x=440, y=615, button='left')"


def test_computer13_json_inside_prose_and_fences() -> None:
    prose = 'I think {"action_type": "PRESS", "parameters": {"key": "tab"}} is right.'
    assert json.loads(extract_action(prose, "computer_13"))["parameters"] == {"key": "tab"}
    fenced = 'Action:\n```json\n{"action_type": "HOTKEY", "parameters": {"keys": ["ctrl", "s"]}}\n```'
    assert json.loads(extract_action(fenced, "computer_13"))["parameters"] == {"keys": ["ctrl", "s"]}
    many = (
        'Action: [{"action_type": "CLICK", "parameters": {"x": 1, "y": 2}}, {"action_type": "TYPING", '
        '"parameters": {"text": "hi"}}]'
    )
    assert [a["action_type"] for a in json.loads(extract_action(many, "computer_13"))] == ["CLICK", "TYPING"]


def test_computer13_coordinates_are_range_checked() -> None:
    reply = 'Action: {"action_type": "CLICK", "parameters": {"x": 1280, "y": 10}}'
    with pytest.raises(ActionError, match="out of range"):
        extract_action(reply, "computer_13", screen=(1280, 720))
    agent, backend = make_agent(reply, action_mode="computer_13")
    assert agent.act(observation(), INFO) == "WAIT"
    assert agent.parse_failures == 1 and len(backend.calls) == 2  # one retry, then the fallback
    assert "out of range" in backend.calls[1][-1]["content"]


def test_invalid_reply_falls_back_to_wait() -> None:
    agent, backend = make_agent("I am not sure what to do here, let me think")
    assert agent.act(observation(), INFO) == "WAIT"
    assert agent.parse_failures == 1 and agent.retries == 1 and len(agent.errors) == 2
    assert len(backend.calls) == 2 and len(agent.replies) == 2
    retry = backend.calls[1]
    assert retry[-2] == {"role": "assistant", "content": "I am not sure what to do here, let me think"}
    assert "could not be used" in retry[-1]["content"]


def test_retry_can_recover() -> None:
    agent, backend = make_agent("pyautogui.click(1, 2", "Action:\n```python\npyautogui.click(1, 2)\n```")
    assert agent.act(observation(), INFO) == "pyautogui.click(1, 2)"
    assert agent.parse_failures == 0 and agent.retries == 1 and len(backend.calls) == 2
    assert "does not compile" in backend.calls[1][-1]["content"]


def test_no_retry_when_disabled() -> None:
    agent, backend = make_agent("nonsense (", retry=False)
    assert agent.act(observation(), INFO) == "WAIT" and agent.parse_failures == 1 and len(backend.calls) == 1


def test_code_and_special_word_together_is_rejected() -> None:
    with pytest.raises(ActionError, match="alone"):
        extract_action("```python\npyautogui.press('enter')\nDONE\n```")


# -- grounding ---------------------------------------------------------------------------------


def test_parse_a11y_table_and_ground() -> None:
    widgets = parse_a11y_table(TABLE)
    assert [w.name for w in widgets] == ["File", "Save As", "Save", ""]
    assert ground("Save", widgets).center == (440, 615)  # exact wins over the substring "Save As"
    assert ground("save as", widgets).center == (350, 220)
    assert ground("fil", widgets).name == "File"
    assert ground("unsaved", widgets).text == "Unsaved changes"  # text is the last resort
    assert ground("Print", widgets) is None
    assert parse_a11y_table("index\ttag\tname\ttext\n1\tmenu\tFile\t") == []  # som table: no positions


def test_click_name_grounds_to_the_widget_centre() -> None:
    agent, _ = make_agent('Thought: I should save.\nAction: click("Save")', backend_name="SmolLM2-135M-Instruct")
    action = agent.act(observation(screenshot=False), INFO)
    assert action == "pyautogui.click(x=440, y=615, button='left')"
    agent, _ = make_agent('Action: double_click("save as")', action_mode="computer_13")
    assert json.loads(agent.act(observation(), INFO)) == {
        "action_type": "DOUBLE_CLICK",
        "parameters": {"x": 350, "y": 220},
    }


def test_keyboard_shorthands_are_validated() -> None:
    assert extract_action('Action: type("hello")') == "pyautogui.write('hello', interval=0)"
    assert extract_action("Action: press('Enter')") == "pyautogui.press('enter')"
    assert extract_action("Action: click(12, 34)") == "pyautogui.click(x=12, y=34, button='left')"
    with pytest.raises(ActionError, match="unknown key"):
        extract_action('Action: press("entr")')


def test_unknown_widget_name_is_an_error_with_the_names() -> None:
    with pytest.raises(ActionError, match=r"no widget named 'Print'.*Save As"):
        extract_action('Action: click("Print")', widgets=parse_a11y_table(TABLE))
    with pytest.raises(ActionError, match="accessibility tree"):
        extract_action('Action: click("Save")')  # no table: nothing to ground in


def test_grounding_off_hides_the_shortcuts() -> None:
    agent, backend = make_agent('Action: click("Save")', grounding=False)
    assert agent.act(observation(), INFO) == "WAIT" and agent.parse_failures == 1
    assert 'click("<name>")' not in system_text(backend)


def test_ground_clamps_to_the_screen() -> None:
    table = HEADER + '\npush-button\tEdge\t""\t\t\t(1270, 710)\t(40, 40)'
    assert extract_action('click("Edge")', screen=(1280, 720), widgets=parse_a11y_table(table)) == (
        "pyautogui.click(x=1279, y=719, button='left')"
    )


def test_words_click_the_widget_named_first_after_the_verb() -> None:
    widgets = parse_a11y_table(TABLE)
    assert extract_action("Click the Save button.", widgets=widgets) == "pyautogui.click(x=440, y=615, button='left')"
    assert extract_action("Action: click on Save As", widgets=widgets) == "pyautogui.click(x=350, y=220, button='left')"
    assert json.loads(extract_action("Action: open the File menu", "computer_13", (1280, 720), widgets)) == {
        "action_type": "CLICK",
        "parameters": {"x": 20, "y": 35},
    }
    # the name must be said on the verb's line: a parroted widget list below does not count
    with pytest.raises(ActionError):
        extract_action("Click the Print button.\nWidgets: Save", widgets=widgets)
    with pytest.raises(ActionError):
        extract_action("Click the Save button.")  # no table: no words grounding


def test_compact_prompt_for_small_models() -> None:
    agent, backend = make_agent("Click the Save button.", backend_name="SmolLM2-135M-Instruct")
    assert agent.compact and agent.history == 0
    for _ in range(2):
        assert agent.act(observation(), INFO) == "pyautogui.click(x=440, y=615, button='left')"
    system, user = system_text(backend), user_content(backend)
    assert "1280x720" in system and 'click("Save")' in system and "```python" in system and len(system) < 600
    assert isinstance(user, str) and "Widgets on screen: File (menu), Save As (push-button), Save (push-button)" in user
    assert "\t" not in user and len(backend.calls[-1]) == 2  # no raw table, no history


# -- vision and text modes ---------------------------------------------------------------------


def test_vision_mode_sends_an_image_part() -> None:
    agent, backend = make_agent("Action: WAIT")
    agent.act(observation(), INFO)
    content = user_content(backend)
    assert isinstance(content, list) and [p["type"] for p in content] == ["text", "image_url"]
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert "screenshot" in system_text(backend)


def test_text_mode_has_no_image() -> None:
    for kwargs, obs in (
        ({"vision": False}, observation()),
        ({}, observation(screenshot=False)),
        ({"backend_name": "SmolLM2-135M-Instruct"}, observation()),
    ):
        agent, backend = make_agent("Action: WAIT", **kwargs)
        agent.act(obs, INFO)
        content = user_content(backend)
        assert isinstance(content, str) and "Save As" in content and "data:image" not in content


def test_text_mode_trims_the_tree() -> None:
    big = HEADER + "".join(f'\npush-button\tButton {i}\t""\t\t\t(0, {i})\t(10, 10)' for i in range(2000))
    agent, backend = make_agent("Action: WAIT", backend_name="SmolLM2-135M-Instruct")
    assert agent.a11y_max_chars == 6000 and agent.max_tokens == 128
    agent.act(observation(screenshot=False, tree=big), INFO)
    content = user_content(backend)
    assert "more lines trimmed]" in content and len(content) < 7000


def test_history_is_text_only() -> None:
    agent, backend = make_agent("Action: WAIT", history=2)
    for _ in range(3):
        agent.act(observation(), INFO)
    messages = backend.calls[-1]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert all(isinstance(m["content"], str) for m in messages[1:-1])
    assert "[observation omitted]" in messages[1]["content"] and "Save As" not in messages[1]["content"]


# -- step guard, episode state, registry -------------------------------------------------------


def test_steps_left_guard_answers_done_without_the_model() -> None:
    agent, backend = make_agent("Action: WAIT")
    assert agent.act(observation(), {"step": 14, "steps_left": 1, "action_error": None}) == "DONE"
    assert backend.calls == [] and agent.forced_done == 1
    assert agent.act(observation(), {"step": 1, "steps_left": 2}) == "WAIT"


def test_reset_clears_episode_state() -> None:
    agent, _ = make_agent("garbage (")
    agent.act(observation(), INFO)
    agent.reset({})
    assert (agent.parse_failures, agent.retries, agent.replies, agent.errors) == (0, 0, [], [])


def test_unbound_agent_uses_the_screenshot_size() -> None:
    agent = GUIAgent(Scripted("Action: WAIT"))
    assert agent.action_mode == "pyautogui"
    assert agent.screen_size({"screenshot": np.zeros((600, 800, 3), np.uint8)}) == (800, 600)
    assert agent.screen_size() == (1920, 1080)


def test_registry_builds_the_gui_agent() -> None:
    spec = AgentSpec("gui")
    assert spec.backend_name == "smollm2"
    builder = spec.build()
    builder._backend = Scripted("Action: DONE")  # no model download: inject the backend
    agent = builder(seed=3)
    assert isinstance(agent, GUIAgent) and agent.name == "gui" and agent.seed == 3


def test_helpers() -> None:
    assert Widget("a", "b", "", 0, 0, 0, 0).center == (0, 0)
    assert trim_table("h\n" + "x" * 50, 10).endswith("[... 1 more lines trimmed]")
    with pytest.raises(ValueError):
        extract_action("DONE", "mouse")
