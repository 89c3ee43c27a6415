"""What a patient can be asked about, and what a doctor can order: the two fixed vocabularies.

Every fact of a case belongs to one :class:`Topic` (``"fever"``, ``"smoking"``, ``"onset"``...), and every
examination or test a doctor can request is a :class:`TestSpec` (``"chest_xray"``, ``"cbc"``...). The
simulator matches a doctor's utterance to topics (keywords first, MiniLM similarity to the topics'
prototype questions second) and discloses only the facts of the matched topics; the measurement unit
resolves a test request to a :class:`TestSpec` and answers from the case.

The vocabularies are data: ``data/catalog.json`` (``topics``, ``tests`` and the ``lay_terms`` a patient says
for medical words), read here when the module is imported and checked by the same schema code as the
condition templates (:mod:`agentrl.envs.consult.records`): a missing, unknown or mistyped field, a repeated
key, a category that does not exist or a keyword that is not a regular expression is an error naming the
file, the entry and the fix.

>>> TOPICS["fever"].category, TESTS["chest_xray"].name
('symptom', 'chest X-ray')
>>> len(TOPICS) >= 60, len(TESTS) >= 50
(True, True)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrl.envs.consult.records import DataError, convert, from_record, read_document, repeated_keys

__all__ = [
    "CATALOG_FILE",
    "CATEGORIES",
    "JARGON",
    "LAY_TERMS",
    "TESTS",
    "TOPICS",
    "TestSpec",
    "Topic",
    "load_catalog",
    "normalize_test_name",
]

#: the kinds of facts, in the order a history is taken
CATEGORIES = ("hpi", "symptom", "history", "social", "family")
#: the kinds of tests
TEST_KINDS = ("exam", "lab", "imaging", "procedure", "questionnaire")
#: the shipped catalogue (package data of the wheel)
CATALOG_FILE = Path(__file__).with_name("data") / "catalog.json"
_FIX = "fix the file (topics have the fields of catalog.Topic, tests those of catalog.TestSpec)"


@dataclass(frozen=True)
class Topic:
    """One thing a doctor can ask about.

    Attributes:
        key: the topic id, e.g. ``"shortness_of_breath"``.
        category: one of :data:`CATEGORIES`.
        label: a short human name ("shortness of breath").
        keywords: one regular expression (matched from a word boundary, on lower case) naming the topic.
        questions: prototype questions, embedded for semantic matching.
        denial: what a patient says when the topic does not apply to them (first person).
    """

    key: str
    category: str
    label: str
    keywords: str
    questions: tuple[str, ...]
    denial: str


@dataclass(frozen=True)
class TestSpec:
    """An examination or investigation a doctor can request with ``REQUEST TEST: <name>``.

    Attributes:
        key: the test id, e.g. ``"chest_xray"``.
        name: the display name.
        synonyms: other names a doctor may use (matched after :func:`normalize_test_name`).
        normal: the result when the case has no abnormal finding for it.
        kind: ``"exam"``, ``"lab"``, ``"imaging"``, ``"procedure"`` or ``"questionnaire"``.
        invasive: invasive or costly: ordering it without cause counts as an unnecessary test.
    """

    key: str
    name: str
    synonyms: tuple[str, ...]
    normal: str
    kind: str
    invasive: bool = False


def load_catalog(path: str | Path = CATALOG_FILE) -> tuple[dict[str, Topic], dict[str, TestSpec], dict[str, str]]:
    """The topics, tests and lay terms of a catalogue file, by key, in file order, each checked.

    Raises:
        DataError: the file is missing or malformed, a key repeats, a topic's category or a test's kind is
            unknown, or a topic's keywords are not a regular expression; the message names the entry.
    """
    restore = (
        f"restore it from the repository (git checkout -- {path}) or reinstall agentrl-gym (its wheel ships "
        "agentrl/envs/consult/data/catalog.json as package data)"
    )
    document = read_document(path, restore=restore, fix=_FIX, what="catalogue file")
    expected = {"description", "topics", "tests", "lay_terms"}
    if not isinstance(document, dict) or set(document) != expected or repeated_keys(document):
        found = sorted(document) if isinstance(document, dict) else type(document).__name__
        raise DataError(f"{path}: the top level has {sorted(expected)}, once each; found {found}; {_FIX}")
    topics: dict[str, Topic] = {}
    for index, record in enumerate(_list(document["topics"], path, "topics")):
        topic = from_record(Topic, record, source=str(path), what="topic", fix=_FIX, index=index)
        _check(topic.key not in topics, path, f"topic {topic.key!r} is defined twice")
        _check(topic.category in CATEGORIES, path, f"topic {topic.key!r}: category {topic.category!r} is not one "
               f"of {', '.join(CATEGORIES)}")
        try:
            re.compile(topic.keywords)
        except re.error as exc:
            raise DataError(f"{path}: topic {topic.key!r}: its keywords are not a regular expression ({exc})") from None
        topics[topic.key] = topic
    tests: dict[str, TestSpec] = {}
    for index, record in enumerate(_list(document["tests"], path, "tests")):
        test = from_record(TestSpec, record, source=str(path), what="test", fix=_FIX, index=index)
        _check(test.key not in tests, path, f"test {test.key!r} is defined twice")
        _check(test.kind in TEST_KINDS, path, f"test {test.key!r}: kind {test.kind!r} is not one of "
               f"{', '.join(TEST_KINDS)}")
        tests[test.key] = test
    try:
        lay_terms: dict[str, str] = convert(document["lay_terms"], Mapping[str, str], "lay_terms")
    except DataError as exc:
        raise DataError(f"{path}: {exc}; {_FIX}") from None
    return topics, tests, lay_terms


def _list(value: Any, path: str | Path, name: str) -> list[Any]:
    if not isinstance(value, list):
        raise DataError(f"{path}: {name!r} must be a list of records; {_FIX}")
    return value


def _check(ok: bool, path: str | Path, problem: str) -> None:
    if not ok:
        raise DataError(f"{path}: {problem}; {_FIX}")


TOPICS, TESTS, LAY_TERMS = load_catalog()
"""``TOPICS``: topic key -> :class:`Topic`; ``TESTS``: test key -> :class:`TestSpec`; ``LAY_TERMS``: medical
words and the lay words a patient uses instead (a lay-vocabulary persona says the right side)."""

#: medical words a lay explanation avoids and a lay patient never says (the longer LAY_TERMS keys), lower case
JARGON = re.compile(r"(?<![a-z])(" + "|".join(re.escape(t.lower()) for t in LAY_TERMS if len(t) > 5) + r")(?![a-z])")

_TEST_NORMALIZE = re.compile(r"[^a-z0-9&/+ ]+")


def normalize_test_name(name: str) -> str:
    """Lower case, punctuation to spaces, ``x-ray`` to ``xray``, single spaces.

    >>> normalize_test_name("  Chest X-Ray, please. ")
    'chest xray please'
    """
    text = name.lower().replace("x-ray", "xray").replace("x ray", "xray")
    text = _TEST_NORMALIZE.sub(" ", text)
    return " ".join(text.split())
