"""The TIR action format and the math verifier (no sandbox needed)."""

from __future__ import annotations

import threading

import pytest

from agentrl.core import Action, ParseError, Task
from agentrl.envs.tirmath.actions import TIRActionSet, extract_last_boxed
from agentrl.envs.tirmath.verify import MathVerifier, answers_equal, exact_rational

ACTIONS = TIRActionSet()


@pytest.mark.parametrize(
    ("text", "kind", "content"),
    [
        ("```python\nx = 2\nprint(x)\n```", "code", "x = 2\nprint(x)"),
        ("First\n```py\na=1\n```\nthen\n```Python\nprint(a)\n```", "code", "a=1\nprint(a)"),
        ("  ```python  \nprint(1)\n  ```  ", "code", "print(1)"),
        ("Answer: \\boxed{\\frac{1}{2}}", "answer", "\\frac{1}{2}"),
        ("```python\nprint(1)\n```\nso \\boxed{1}", "answer", "1"),
        ("\\boxed{a} then \\boxed{ {b} }", "answer", "{b}"),
        ("\\fbox{7}", "answer", "7"),
    ],
)
def test_parse_actions(text, kind, content):
    action = ACTIONS.parse(text)
    assert isinstance(action, Action) and (action.kind, action.content) == (kind, content)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "no ```python code block"),
        ("```python\nprint(1)", "not closed"),
        ("\\boxed{7", "\\boxed{ is not closed"),
        ("```\nprint(1)\n```", "no ```python code block"),
        ("\ud800\udfff garbage \x00\x01", "no ```python"),
    ],
)
def test_malformed_turns_are_parse_errors(text, fragment):
    result = ACTIONS.parse(text)
    assert isinstance(result, ParseError) and fragment in result.message and result.void


def test_every_malformed_example_is_a_parse_error():
    assert all(isinstance(ACTIONS.parse(t), ParseError) for t in ACTIONS.malformed_examples())


def test_parse_is_linear_on_huge_and_nested_input():
    assert extract_last_boxed("\\boxed{" * 20000) is None
    assert isinstance(ACTIONS.parse("```python\n" * 5000), ParseError)


def test_tool_schemas_are_openai_functions():
    names = [schema["function"]["name"] for schema in ACTIONS.tool_schemas()]
    assert names == ["run_python", "final_answer"]
    assert ACTIONS.parse(ACTIONS.format_final("3")).content == "3"
    assert ACTIONS.parse(ACTIONS.format_code("print(3)")).content == "print(3)"


@pytest.mark.parametrize(
    ("prediction", "gold", "equal"),
    [
        ("42", "42", True),
        ("42.0", "42", True),
        ("\\frac{84}{2}", "42", True),
        ("-\\frac{3}{7}", "-\\frac{3}{7}", True),
        ("-3/7", "-\\frac{3}{7}", True),
        ("1,000,000", "1000000", True),
        ("$42$", "42", True),
        ("43", "42", False),
        ("\\sqrt{8}", "2\\sqrt{2}", True),
        ("(x+1)^2", "x^2+2x+1", True),
        ("x^2+2x", "x^2+2x+1", False),
        ("banana", "42", False),
        ("", "42", False),
    ],
)
def test_answers_equal(prediction, gold, equal):
    assert answers_equal(prediction, gold) is equal
    assert MathVerifier()(Task("t", "", gold), prediction, {}).value == float(equal)


def test_exact_rational_rejects_what_it_cannot_read():
    assert exact_rational("1/0") is None
    assert exact_rational("9" * 1000) is None


def test_verifier_works_off_the_main_thread_and_bounds_hostile_answers():
    verifier = MathVerifier(timeout_s=3.0)
    task = Task("t", "", "\\sqrt{2}")
    results: list[float] = []
    thread = threading.Thread(target=lambda: results.append(verifier(task, "2^{1/2}", {}).value))
    thread.start()
    thread.join(60)
    assert results == [1.0]
    for hostile in ["10^{10^{10^{10}}}", "\\frac{" * 300, "\ud800", "x" * 5000, "9" * 900 + "!"]:
        score = verifier(task, hostile, {})
        assert score.value == 0.0
    # still usable after a timeout or a crash of the helper process
    assert verifier(task, "\\sqrt{2}", {}).value == 1.0
    assert verifier(Task("t", "", "x^2"), "x*x", {}).value == 1.0
