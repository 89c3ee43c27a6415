"""The measurement unit: answers ``REQUEST TEST: <name>`` from the case.

A request is resolved to a :class:`~agentrl.envs.consult.catalog.TestSpec` by name or synonym (case,
punctuation and "x-ray"/"xray" ignored; small typos forgiven). The result is the case's abnormal
finding when it has one, the test's normal result otherwise. A test that does not exist, or does
not apply to this patient, gets an error that names the closest tests.

>>> resolve_test("Chest X-ray").key, resolve_test("FBC").key, resolve_test("troponinn").key
('chest_xray', 'cbc', 'troponin')
>>> resolve_test("brain transplant") is None
True
>>> run_test("CXR", {"chest_xray": "Right lower lobe consolidation."}, sex="male").text
'[result] chest X-ray: Right lower lobe consolidation.'
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from agentrl.envs.consult.catalog import TESTS, TestSpec, normalize_test_name

__all__ = ["TestOutcome", "resolve_test", "run_test", "suggest_tests"]

_BY_NAME: dict[str, str] = {}
for _spec in TESTS.values():
    for _name in (_spec.key.replace("_", " "), _spec.name, *_spec.synonyms):
        _BY_NAME.setdefault(normalize_test_name(_name), _spec.key)
_PREFIXES = ("a ", "an ", "the ", "some ", "please ", "do a ", "do an ", "order a ", "order an ", "get a ")
_SUFFIXES = (" please", " test", " tests", " now")
_FEMALE_ONLY = frozenset({"pregnancy_test", "pelvic_ultrasound", "pelvic_exam"})


@dataclass(frozen=True)
class TestOutcome:
    """The answer to one test request: ``spec`` is ``None`` when the request was refused (``error``)."""

    spec: TestSpec | None
    text: str
    error: str | None = None


def resolve_test(name: str) -> TestSpec | None:
    """The test a requested name means, or ``None``."""
    text = normalize_test_name(name)
    candidates = [text]
    for prefix in _PREFIXES:
        if text.startswith(prefix):
            candidates.append(text[len(prefix) :])
    for candidate in list(candidates):
        for suffix in _SUFFIXES:
            if candidate.endswith(suffix):
                candidates.append(candidate[: -len(suffix)])
    for candidate in candidates:
        if candidate in _BY_NAME:
            return TESTS[_BY_NAME[candidate]]
    for candidate in candidates:
        if len(candidate) >= 4:
            close = difflib.get_close_matches(candidate, list(_BY_NAME), n=1, cutoff=0.88)
            if close:
                return TESTS[_BY_NAME[close[0]]]
    return None


def suggest_tests(name: str, n: int = 3) -> list[str]:
    """Names of the tests closest to ``name``."""
    close = difflib.get_close_matches(normalize_test_name(name), list(_BY_NAME), n=n * 3, cutoff=0.4)
    return list(dict.fromkeys(TESTS[_BY_NAME[c]].name for c in close))[:n]


def run_test(name: str, results: Mapping[str, str], *, sex: str) -> TestOutcome:
    """Answer one request from a case's abnormal ``results`` (test key -> finding)."""
    spec = resolve_test(name)
    if spec is None:
        suggestions = suggest_tests(name)
        hint = f"; did you mean {' or '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        shown = name if len(name) <= 60 else name[:57] + "..."
        return TestOutcome(None, "", f"no test called {shown!r} is available{hint}")
    if spec.key in _FEMALE_ONLY and sex != "female":
        return TestOutcome(None, "", f"the {spec.name} does not apply to this patient")
    return TestOutcome(spec, f"[result] {spec.name}: {results.get(spec.key, spec.normal)}")
