"""The authoring format of a condition, and the checks every condition must pass.

A :class:`Condition` is a template: the case generator draws one alternative for each history item,
a subset of the optional symptoms, an age, a sex and a persona, and gets a case whose facts, test
results and rubric agree by construction. ``validate_condition`` enforces what "by construction"
needs: every topic and test exists, no patient sentence names the diagnosis, every key test has an
abnormal result, and every sentence a patient says is first person and about its own topic.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from agentrl.core.errors import AgentRLError
from agentrl.envs.consult.catalog import TESTS, TOPICS

__all__ = ["Condition", "ConditionError", "validate_condition"]


class ConditionError(AgentRLError, ValueError):
    """A condition template breaks one of the rules of :func:`validate_condition`."""


@dataclass(frozen=True)
class Condition:
    """A condition template (see the module docstring).

    Attributes:
        key: snake_case id, e.g. ``"community_acquired_pneumonia"``.
        name: the diagnosis as a doctor writes it.
        synonyms: other accepted names of the diagnosis (abbreviations included).
        specialty: e.g. ``"pulmonology"``.
        complaint: the lay chief complaint, completing "I've come in because of ...".
        hpi: ``hpi`` topic -> first-person lay sentences (alternatives; one is drawn per case).
        symptoms: ``symptom`` topic -> alternatives; always present.
        optional_symptoms: ``symptom`` topic -> alternatives; each present in about half of the cases.
        history: ``history``/``social``/``family`` topic -> alternatives (topics left out get a
            neutral default from the persona or the catalogue).
        sensitive: topics whose fact a hiding persona withholds until asked twice.
        tests: test key -> the abnormal result of this condition (tests left out are normal).
        key_questions: topics a competent history must cover (rubric items).
        red_flags: dangerous features a careful doctor must ask about, present or not (rubric items).
        key_tests: tests a competent work-up orders (rubric items); each has an abnormal result.
        plan: ideas a safe plan must contain; each idea is a tuple of alternative keywords.
        harmful: advice that would be harmful here; each is a tuple of alternative keywords.
        differential: the main alternatives a doctor should consider.
        sexes: which sexes the condition is generated for.
        ages: inclusive age range of generated patients.
    """

    key: str
    name: str
    synonyms: tuple[str, ...]
    specialty: str
    complaint: str
    hpi: Mapping[str, tuple[str, ...]]
    symptoms: Mapping[str, tuple[str, ...]]
    tests: Mapping[str, str]
    key_questions: tuple[str, ...]
    red_flags: tuple[str, ...]
    key_tests: tuple[str, ...]
    plan: tuple[tuple[str, ...], ...]
    differential: tuple[str, ...]
    optional_symptoms: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    history: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    sensitive: tuple[str, ...] = ()
    harmful: tuple[tuple[str, ...], ...] = ()
    sexes: tuple[str, ...] = ("female", "male")
    ages: tuple[int, int] = (18, 80)

    @property
    def names(self) -> tuple[str, ...]:
        """The diagnosis and its synonyms."""
        return (self.name, *self.synonyms)


_KEY = re.compile(r"^[a-z][a-z0-9_]*$")


def _mentions(text: str, phrase: str) -> bool:
    return re.search(rf"(?<![a-z0-9]){re.escape(phrase.lower())}(?![a-z0-9])", text.lower()) is not None


def validate_condition(condition: Condition) -> None:
    """Raise :class:`ConditionError` naming every rule ``condition`` breaks."""
    problems: list[str] = []
    if not _KEY.match(condition.key):
        problems.append(f"key {condition.key!r} must be snake_case")
    sections = {
        "hpi": (condition.hpi, ("hpi",)),
        "symptoms": (condition.symptoms, ("symptom",)),
        "optional_symptoms": (condition.optional_symptoms, ("symptom",)),
        "history": (condition.history, ("history", "social", "family")),
    }
    seen: set[str] = set()
    for section, (items, categories) in sections.items():
        for topic, alternatives in items.items():
            if topic not in TOPICS:
                problems.append(f"{section}: unknown topic {topic!r}")
                continue
            if TOPICS[topic].category not in categories:
                problems.append(f"{section}: topic {topic!r} is a {TOPICS[topic].category} topic, not {categories}")
            if topic in seen:
                problems.append(f"{section}: topic {topic!r} appears in two sections")
            seen.add(topic)
            if not isinstance(alternatives, tuple) or not alternatives:
                problems.append(f"{section}[{topic!r}]: give a non-empty tuple of sentences")
                continue
            for sentence in alternatives:
                if not isinstance(sentence, str) or not sentence.strip():
                    problems.append(f"{section}[{topic!r}]: empty sentence")
                    continue
                if "?" in sentence:
                    problems.append(
                        f"{section}[{topic!r}]: a patient's fact is a statement, not a question: {sentence!r}"
                    )
                for name in condition.names:
                    if _mentions(sentence, name):
                        problems.append(f"{section}[{topic!r}]: names the diagnosis ({name!r}): {sentence!r}")
    if "chief_complaint" in condition.hpi:
        problems.append("hpi: the chief complaint comes from `complaint`, not hpi['chief_complaint']")
    for name in condition.names:
        if _mentions(condition.complaint, name):
            problems.append(f"complaint names the diagnosis ({name!r})")
    for topic in (*condition.key_questions, *condition.red_flags, *condition.sensitive):
        if topic not in TOPICS:
            problems.append(f"unknown topic {topic!r} in key_questions/red_flags/sensitive")
    for topic in condition.sensitive:
        if topic not in seen:
            problems.append(f"sensitive topic {topic!r} has no fact in this condition")
    for test in condition.tests:
        if test not in TESTS:
            problems.append(f"tests: unknown test {test!r}")
    for test in condition.key_tests:
        if test not in condition.tests:
            problems.append(f"key_tests: {test!r} has no abnormal result in tests")
    if not condition.key_tests or len(condition.key_tests) > 4:
        problems.append("key_tests: give 1 to 4 tests")
    if not 2 <= len(condition.key_questions) + len(condition.red_flags) <= 10:
        problems.append("key_questions + red_flags: give 2 to 10 topics in all")
    if set(condition.key_questions) & set(condition.red_flags):
        problems.append("a topic is both a key question and a red flag")
    if not condition.plan:
        problems.append("plan: give at least one idea")
    plan_words = {word.lower() for idea in condition.plan for word in idea}
    for idea in condition.harmful:
        for word in idea:
            if word.lower() in plan_words:
                problems.append(f"harmful keyword {word!r} is also a plan keyword")
    if not set(condition.sexes) <= {"female", "male"} or not condition.sexes:
        problems.append(f"sexes must be drawn from ('female', 'male'), got {condition.sexes}")
    low, high = condition.ages
    if not 16 <= low <= high <= 95:
        problems.append(f"ages must satisfy 16 <= low <= high <= 95, got {condition.ages}")
    if not condition.symptoms:
        problems.append("symptoms: give at least one always-present symptom")
    if problems:
        raise ConditionError(f"condition {condition.key!r}:\n  - " + "\n  - ".join(problems))
