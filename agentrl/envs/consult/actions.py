"""The doctor's action format: speak, ``REQUEST TEST: <name>``, or ``DIAGNOSIS: <diagnosis>``.

A turn with a ``DIAGNOSIS:`` line concludes the consultation: the rest of the turn (a ``PLAN:``
line, words to the patient) is graded with it. A turn with ``REQUEST TEST:`` lines (at most
:data:`MAX_TESTS_PER_TURN`) orders tests. Any other text is spoken to the patient.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agentrl.core.actions import Action, ActionSet, ParseError, function_schema

__all__ = ["MAX_TESTS_PER_TURN", "ConsultActionSet"]

MAX_TESTS_PER_TURN = 4
_DIAGNOSIS = re.compile(r"^[\s*_#>-]*diagnosis[\s*_]*:(.*)$", re.IGNORECASE | re.MULTILINE)
_TEST = re.compile(r"^[\s*_#>-]*request[\s_]+tests?[\s*_]*:(.*)$", re.IGNORECASE | re.MULTILINE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


class ConsultActionSet(ActionSet):
    r"""Parse one doctor turn; never raises on the doctor's text.

    >>> actions = ConsultActionSet()
    >>> actions.parse("When did the cough start?").kind
    'say'
    >>> actions.parse("REQUEST TEST: chest X-ray\nREQUEST TEST: CBC").args["tests"]
    ('chest X-ray', 'CBC')
    >>> actions.parse("It's a chest infection.\nDIAGNOSIS: pneumonia\nPLAN: antibiotics").kind
    'diagnosis'
    >>> actions.parse("DIAGNOSIS:").message
    'your DIAGNOSIS: line is empty; write DIAGNOSIS: <the diagnosis>'
    """

    final_kinds = frozenset({"diagnosis"})

    def describe(self) -> str:
        """The action format, for the prompt."""
        return (
            "Each turn, do one of three things:\n"
            "- Speak to the patient: write your question(s) in plain words (one or two at a time works best).\n"
            f"- Order examinations or tests: one line each, 'REQUEST TEST: <name>' (at most {MAX_TESTS_PER_TURN} per "
            "turn), for example 'REQUEST TEST: chest X-ray'. Examinations (e.g. 'abdominal examination', "
            "'vital signs') are requested the same way.\n"
            "- Conclude: explain your conclusion to the patient in plain words, then write a line "
            "'DIAGNOSIS: <diagnosis>' and a line 'PLAN: <management plan>'. This ends the consultation."
        )

    def parse(self, text: str) -> Action | ParseError:
        """Parse one turn (see the module docstring)."""
        if not isinstance(text, str) or not text.strip():
            return ParseError(
                "empty turn: ask the patient something, write 'REQUEST TEST: <name>', or conclude with "
                "'DIAGNOSIS: <diagnosis>'",
                raw="",
            )
        text = _CONTROL.sub("", text)  # stray control characters from a sampler: drop them, keep the words
        if not text.strip():
            return ParseError("your turn holds only control or invalid characters; write plain text", raw="")
        diagnoses = [m.group(1).strip() for m in _DIAGNOSIS.finditer(text)]
        if diagnoses:
            if not diagnoses[0]:
                return ParseError("your DIAGNOSIS: line is empty; write DIAGNOSIS: <the diagnosis>", raw=text)
            return Action("diagnosis", text.strip(), raw=text, args={"diagnosis": diagnoses[0]})
        tests = [m.group(1).strip() for m in _TEST.finditer(text)]
        if tests:
            if any(not name for name in tests):
                return ParseError("a REQUEST TEST: line is empty; write REQUEST TEST: <test name>", raw=text)
            if len(tests) > MAX_TESTS_PER_TURN:
                return ParseError(
                    f"{len(tests)} tests in one turn; order at most {MAX_TESTS_PER_TURN} per turn", raw=text, void=False
                )
            speech = _TEST.sub("", text).strip()
            return Action("test", "\n".join(tests), raw=text, args={"tests": tuple(tests), "speech": speech})
        return Action("say", text.strip(), raw=text)

    def tool_schemas(self) -> list[dict[str, Any]]:
        """``ask``, ``request_test`` and ``diagnose`` as OpenAI function schemas."""
        return [
            function_schema("ask", "Say something to the patient (a question, an explanation).", text="what to say"),
            function_schema("request_test", "Order an examination or test.", test="the test, e.g. 'chest X-ray'"),
            function_schema("diagnose", "Conclude the consultation.", diagnosis="the diagnosis", plan="the plan"),
        ]

    def format_final(self, answer: str) -> str:
        """A concluding turn with only a diagnosis."""
        return f"DIAGNOSIS: {answer}"

    def format_test(self, name: str) -> str:
        """A test request."""
        return f"REQUEST TEST: {name}"

    def malformed_examples(self) -> Sequence[str]:
        """Turns that must not parse."""
        return ("", "   \n ", "DIAGNOSIS:", "REQUEST TEST:   ", "\x00\x01", "\n".join(["REQUEST TEST: CBC"] * 9))
