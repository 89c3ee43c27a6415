r"""The TIR action format: fenced Python blocks to run, ``\\boxed{}`` to answer.

One agent turn is free text. If it contains ``\\boxed{...}`` (balanced braces), the last boxed
expression is the final answer. Otherwise every complete fenced block tagged ``python`` (or ``py``)
is run, in order, as one cell of a notebook-like session. A turn with neither is a *void turn*
(SimpleTIR); an unclosed fence is reported so the agent can fix it. With ``last_number_answers`` (the
easy tier), such a turn answers with its last number instead, as lm-evaluation-harness's GSM8K
"flexible-extract" filter reads a reply.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agentrl.core.actions import Action, ActionSet, ParseError, function_schema

__all__ = ["TIRActionSet", "extract_last_boxed", "extract_last_number", "python_code_blocks"]

# A fence opens at the start of a line: ```python / ```py (any case), optional trailing spaces.
_OPEN = re.compile(r"^[ \t]*```[ \t]*(python3?|py)[ \t]*$", re.IGNORECASE | re.MULTILINE)
_CLOSE = re.compile(r"^[ \t]*```[ \t]*$", re.MULTILINE)
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
# A number as lm-evaluation-harness's GSM8K "flexible-extract" filter finds it: optional sign, digits with
# thousands commas, an optional decimal part; a fraction a/b is kept whole.
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:/\d+)?")


def extract_last_number(text: str) -> str | None:
    """The last number in a text, commas removed (the GSM8K "flexible-extract" rule), or ``None``.

    >>> extract_last_number("So x = 7. The answer is 1,250.")
    '1250'
    >>> extract_last_number("half of it: -3/4") , extract_last_number("no digits") is None
    ('-3/4', True)
    """
    found = _NUMBER.findall(text)
    return found[-1].replace(",", "").rstrip(".") if found else None


def extract_last_boxed(text: str) -> str | None:
    r"""The content of the last ``\boxed{...}`` (or ``\fbox{...}``) with balanced braces.

    >>> extract_last_boxed(r"so \boxed{1} or rather \boxed{\frac{1}{2}}.")
    '\\frac{1}{2}'
    >>> extract_last_boxed(r"\boxed{unclosed") is None
    True
    """
    # One left-to-right pass with a stack of open braces keeps this linear on hostile input
    # such as "\\boxed{" repeated 100k times.
    openers = {match.end() - 1: match.end() for match in _BOXED.finditer(text)}
    stack: list[int] = []
    best_start, found = -1, None
    for index, char in enumerate(text):
        if char == "{":
            stack.append(index)
        elif char == "}" and stack:
            opened = stack.pop()
            start = openers.get(opened)
            if start is not None and start > best_start:
                best_start, found = start, text[start:index]
    return found


def python_code_blocks(text: str) -> tuple[list[str], bool]:
    r"""All complete python blocks of a message, and whether a python fence was left unclosed.

    >>> python_code_blocks("Let me compute.\n```python\nprint(1)\n```\n")
    (['print(1)'], False)
    """
    blocks: list[str] = []
    position = 0
    while True:
        opening = _OPEN.search(text, position)
        if opening is None:
            return blocks, False
        closing = _CLOSE.search(text, opening.end())
        if closing is None:
            return blocks, True
        blocks.append(text[opening.end() + 1 : closing.start()].rstrip("\n"))
        position = closing.end()


class TIRActionSet(ActionSet):
    r"""Tool-integrated reasoning actions: ``code`` (run Python) and ``answer`` (final).

    >>> actions = TIRActionSet()
    >>> actions.parse("Let me compute.\n```python\nprint(2**10)\n```").content
    'print(2**10)'
    >>> actions.parse(r"The answer is \boxed{1024}.").kind
    'answer'
    >>> actions.parse("I think it is 1024.").message[:33]
    'no ```python code block and no \\b'
    """

    final_kinds = frozenset({"answer"})

    def __init__(self, *, last_number_answers: bool = False) -> None:
        r"""Make the action set.

        Args:
            last_number_answers: a turn with neither ``\\boxed{}`` nor a python block answers with its
                last number (lm-evaluation-harness's GSM8K "flexible-extract"), instead of being a void
                turn. The easy tier uses it: a small model that writes "The answer is 7." answers 7.
        """
        self.last_number_answers = last_number_answers

    def describe(self) -> str:
        """The action format, for the prompt (the easy tier's is one line: no code instructions)."""
        if self.last_number_answers:
            return "Give the final answer as \\boxed{...}."
        return (
            "To run Python, write a fenced block:\n"
            "```python\n"
            "print(2**100 % 7)\n"
            "```\n"
            "The code runs in a persistent Python session (variables survive between turns; numpy and "
            "sympy are available; no network); its printed output comes back as ```output ...```.\n"
            "When you are sure, give the final answer as \\boxed{...}; that ends the episode."
        )

    def parse(self, text: str) -> Action | ParseError:
        """Parse one turn; never raises."""
        boxed = extract_last_boxed(text)
        if boxed is not None:
            return Action("answer", boxed.strip(), raw=text)
        blocks, unclosed = python_code_blocks(text)
        if blocks:
            return Action("code", "\n".join(blocks), raw=text)
        if unclosed:
            return ParseError(
                "your ```python block is not closed; end the code with ``` on a line of its own", raw=text
            )
        number = extract_last_number(text) if self.last_number_answers else None
        if number is not None:
            return Action("answer", number, raw=text)
        if _BOXED.search(text):
            return ParseError("your \\boxed{ is not closed; write the final answer as \\boxed{...}", raw=text)
        return ParseError(
            "no ```python code block and no \\boxed{...} answer found; write code in a ```python block "
            "or give the final answer as \\boxed{...}",
            raw=text,
        )

    def tool_schemas(self) -> list[dict[str, Any]]:
        """``run_python`` and ``final_answer`` as OpenAI function schemas."""
        return [
            function_schema(
                "run_python",
                "Run Python code in a persistent sandboxed session; returns printed output.",
                code="Python source code",
            ),
            function_schema(
                "final_answer",
                "Give the final answer (a number or LaTeX expression); ends the episode.",
                answer="the final answer",
            ),
        ]

    def format_final(self, answer: str) -> str:
        """A final-answer turn."""
        return f"The answer is \\boxed{{{answer}}}."

    def format_code(self, code: str) -> str:
        """A code turn."""
        return f"```python\n{code}\n```"

    def malformed_examples(self) -> Sequence[str]:
        """Turns that must not parse."""
        if self.last_number_answers:  # a turn with a number answers with it
            return ("", "I do not know.", "```python\nprint(1)\n", "\\boxed{x")
        return ("", "I think the answer is 7.", "```python\nprint(1)\n", "\\boxed{7", "```\nprint(1)\n```")
