"""Loaders for outside data: AgentClinic cases and HealthBench-style rubrics.

:func:`load_agentclinic` turns the OSCE cases of AgentClinic's JSONL files (``agentclinic_medqa.jsonl``
and friends: one ``{"OSCE_Examination": {...}}`` object per line) into :class:`~agentrl.envs.consult.tasks.Case`
objects: the patient actor's history, symptoms and social history become atomic facts filed under the
:data:`~agentrl.envs.consult.catalog.TOPICS` they answer, and the examination findings and test results
become the case's results under the :data:`~agentrl.envs.consult.catalog.TESTS` they resolve to.
Nothing is dropped silently: symptoms no topic matches are kept in ``extra["unmapped_symptoms"]`` (and
told with the history), results no test name resolves to in ``extra["unmapped_tests"]``. No fact ever
names the diagnosis: a sentence that does is left out.

:func:`load_healthbench_rubrics` reads rubric rows in the format of OpenAI's HealthBench
(``{"prompt_id", "prompt", "rubrics": [{"criterion", "points", "tags"}]}``) as free-text
:class:`~agentrl.envs.consult.rubric.Criterion` lists (kind ``"judge"``: an LLM judge grades them), and
:func:`attach_rubrics` puts them on the cases they name.

>>> _parse_demographics("45-year-old male")
(45, 'male', [])
>>> _parse_demographics("8-month-old boy")
(0, 'male', [])
>>> _parse_demographics("")
(40, 'female', ['age', 'sex'])
>>> _slug("Progressive multifocal encephalopathy (PML)")
'progressive_multifocal_encephalopathy_pml'
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentrl.core.errors import TaskFormatError
from agentrl.core.task import read_jsonl
from agentrl.envs.consult.catalog import TOPICS, normalize_test_name
from agentrl.envs.consult.matching import _KEYWORDS, TopicMatcher
from agentrl.envs.consult.measurement import CASE_PREFIX, resolve_test
from agentrl.envs.consult.persona import draw_persona
from agentrl.envs.consult.rubric import Criterion, build_rubric
from agentrl.envs.consult.tasks import FEMALE_NAMES, MALE_NAMES, SURNAMES, Case, Fact

__all__ = ["attach_rubrics", "load_agentclinic", "load_healthbench_rubrics"]

#: the plan every AgentClinic case asks for (the files give none): any follow-up or treatment
PLAN: tuple[tuple[str, ...], ...] = (("follow-up", "follow up", "review", "treatment", "treat"),)
#: default demographics when a case gives none (noted in ``extra["defaulted"]``)
DEFAULT_AGE = 40
DEFAULT_SEX = "female"
MAX_KEY_QUESTIONS = 4
MAX_KEY_TESTS = 3

_FEMALE_ONLY = frozenset({"pregnancy_test", "pelvic_ultrasound", "pelvic_exam"})
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_NEGATED = re.compile(
    r"^\s*(?:(?:the )?(?:patient|he|she|they|mother|parents?) )?(?:no|denies|denied|negative)\b", re.I
)
_UNINFORMATIVE = re.compile(
    r"^\s*(?:information |details? )?(?:not (?:provided|available|given|reported)|unknown|none|n/?a)\.?\s*$"
    r"|\bno (?:additional|other|further) symptoms\b",
    re.I,
)
_SOCIAL = tuple(key for key, topic in TOPICS.items() if topic.category == "social")
_MATCHER = TopicMatcher(semantic=False)


# -- AgentClinic cases -------------------------------------------------------------------------------
def _slug(text: str) -> str:
    """A lower-case identifier: runs of other characters become one underscore."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "unknown"


_YEARS = re.compile(r"(\d{1,3})\s*-?\s*(?:years?|yrs?|yo\b|y/o)")
_MONTHS = re.compile(r"(\d{1,3})\s*-?\s*months?\b")
_YOUNG = re.compile(r"\d+\s*-?\s*(?:weeks?|days?|hours?)\b|\b(?:newborn|neonate|infant|baby|premature|preterm)\b")
_AGE_IN_TEXT = re.compile(r"\b(\d{1,3})\s*-\s*(year|month|week|day|hour)s?\s*-\s*old\b")
_FEMALE_WORD = re.compile(r"\b(?:female|woman|women|girl|lady|f|pregnant|g\d+\s*p\d+|primigravida|multigravida)\b")
_MALE_WORD = re.compile(r"\b(?:male|man|men|boy|gentleman|m)\b")
_SHE = re.compile(r"\b(?:she|her|hers|herself)\b")
_HE = re.compile(r"\b(?:he|his|him|himself)\b")
_PREGNANT = re.compile(r"(?i)\b(?:pregnant|pregnancy at|g\d+\s*p\d+|primigravida|multigravida|in labou?r"
                       r"|\d+\s*weeks?(?:'|’)? (?:of )?gestation)\b")
_PARENT = re.compile(r"\b(?:mother|father|mom|dad|parents?|wife|husband|sister|brother|aunt|uncle)\b[^.;]*")


def _age_from(match_text: str) -> int | None:
    years = _YEARS.search(match_text)
    if years:
        return int(years.group(1))
    months = _MONTHS.search(match_text)
    if months:
        return int(months.group(1)) // 12
    if _YOUNG.search(match_text):
        return 0
    return None


def _parse_demographics(text: str, *context: str) -> tuple[int, str, list[str]]:
    """``(age, sex, defaulted)`` from e.g. ``"45-year-old male"``; ``defaulted`` names what was missing.

    When the demographics line lacks the age or the sex, the other texts (history, the case's
    question) are read: an ``N-year-old`` / ``N-month-old`` phrase, a sex word, else the patient's
    pronouns (sentences about a parent or a relative are skipped).

    >>> _parse_demographics("9-month-old infant", "He was brought in by his mother.")
    (0, 'male', [])
    >>> _parse_demographics("30-month-old"), _parse_demographics("3-year-old child", "She has a rash.")
    ((2, 'female', ['sex']), (3, 'female', []))
    """
    lowered = text.lower()
    defaulted: list[str] = []
    age = _age_from(lowered)
    others = " ".join(c.lower() for c in context if c)
    if age is None and others:
        found = _AGE_IN_TEXT.search(others)
        if found:
            age = int(found.group(1)) if found.group(2) == "year" else (
                int(found.group(1)) // 12 if found.group(2) == "month" else 0)
    if age is None:
        age = DEFAULT_AGE
        defaulted.append("age")
    sex = ""
    for source in (lowered, _PARENT.sub(" ", others)):
        if _FEMALE_WORD.search(source):
            sex = "female"
        elif _MALE_WORD.search(source):
            sex = "male"
        if sex:
            break
    if not sex and others:
        own = _PARENT.sub(" ", others)
        she, he = len(_SHE.findall(own)), len(_HE.findall(own))
        sex = "female" if she > he else "male" if he > she else ""
    if not sex:
        sex = DEFAULT_SEX
        defaulted.append("sex")
    return age, sex, defaulted


def _diagnosis_names(diagnosis: str) -> list[str]:
    """The diagnosis, without its parenthesis, and the parenthesis itself (an abbreviation such as PML)."""
    names = [diagnosis.strip()]
    bare = re.sub(r"\s*\([^)]*\)", "", diagnosis).strip()
    names.append(bare)
    names.extend(inner.strip() for inner in re.findall(r"\(([^)]*)\)", diagnosis))
    return [n for n in dict.fromkeys(names) if len(n) >= 3]


def _names_diagnosis(text: str, names: Sequence[str]) -> bool:
    return any(re.search(rf"(?<![a-z0-9]){re.escape(name.lower())}(?![a-z0-9])", text.lower()) for name in names)


def _without_diagnosis(text: str, names: Sequence[str]) -> str:
    """``text`` less the sentences that name the diagnosis."""
    return " ".join(s for s in _SENTENCE.split(text.strip()) if s and not _names_diagnosis(s, names)).strip()


def _sentence(text: str) -> str:
    """A capitalised sentence ending in a full stop."""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def _fact(topic: str, text: str) -> Fact:
    return Fact(topic, _sentence(text), present=not _NEGATED.match(text), relevant=True)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (list, tuple)):
        return _join(_as_text(v) for v in value)
    if isinstance(value, Mapping):
        return _join(_flatten(value))
    return "" if value is None else str(value)


def _label(key: object) -> str:
    return " ".join(str(key).replace("_", " ").split())


def _join(parts: Iterable[str]) -> str:
    """Join findings with ``"; "``, or a space after one that already ends a sentence.

    >>> _join(["Pale.", "Pulse: 104 bpm", "BP: 150/95 mmHg"])
    'Pale. Pulse: 104 bpm; BP: 150/95 mmHg'
    """
    out = ""
    for part in parts:
        if part:
            out += ("" if not out else " " if out[-1] in ".!?" else "; ") + part
    return out


def _flatten(value: Any, prefix: str = "") -> list[str]:
    """``"Name: value"`` strings of a nested finding.

    Path parts are joined by ``" / "``; a ``Findings`` key adds no label.

    >>> _flatten({"Findings": "Normal.", "Limb": {"Right_Arm": "4/5"}})
    ['Normal.', 'Limb / Right Arm: 4/5']
    """
    if isinstance(value, Mapping):
        out: list[str] = []
        for key, sub in value.items():
            label = "" if _label(key).lower() == "findings" else _label(key)
            out.extend(_flatten(sub, f"{prefix} / {label}" if prefix and label else prefix or label))
        return out
    text = _as_text(value)
    if not text:
        return []
    return [f"{prefix}: {text}" if prefix else text]


def _map_tests(sections: Iterable[Any]) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """``(tests, unmapped, order)``: results by test key, unresolved ones by name, keys in order of appearance."""
    tests: dict[str, list[str]] = {}
    unmapped: dict[str, str] = {}
    order: list[str] = []

    def put(key: str, text: str) -> None:
        if text:
            tests.setdefault(key, []).append(text)
            if key not in order:
                order.append(key)

    def named(label: str, value: Any, spec: Any) -> str:
        # an analyte or a sub-test keeps its own name ("Hemoglobin: 9 g/dL" under the blood count)
        own = {normalize_test_name(spec.name), normalize_test_name(spec.key.replace("_", " "))}
        if isinstance(value, Mapping) or normalize_test_name(label) in own:
            return _join(_flatten(value))
        return _join(_flatten(value, label))

    for section in sections:
        if not isinstance(section, Mapping):
            if _as_text(section):
                unmapped.setdefault("Findings", _as_text(section))
            continue
        for name, value in section.items():
            spec = resolve_test(_label(name))
            if spec is not None:
                put(spec.key, named(_label(name), value, spec))
                continue
            if not isinstance(value, Mapping):
                if _as_text(value):
                    unmapped[_label(name)] = _as_text(value)
                continue
            for sub_name, sub_value in value.items():
                sub_spec = resolve_test(_label(sub_name))
                if sub_spec is not None:
                    put(sub_spec.key, named(_label(sub_name), sub_value, sub_spec))
                elif _as_text(sub_value):
                    sub_label = _label(sub_name)
                    where = _label(name) if sub_label.lower() == "findings" else f"{_label(name)} / {sub_label}"
                    unmapped[where] = _join(_flatten(sub_value))
    return {key: _join(parts) for key, parts in tests.items()}, unmapped, order


def _case_entries(sections: Iterable[tuple[str, Any]]) -> dict[str, str]:
    """Every result of a case under its own name path (``"Blood Work / Complete Blood Count / WBC"``).

    Each named node of the nested findings gets an entry whose text is its whole subtree, flattened
    with the names kept; ``Findings`` keys add no name. A section that is plain text is one entry
    named after the section.

    >>> _case_entries([("Test Results", {"CBC": {"WBC": "High", "Platelets": "Normal"},
    ...                                  "Ultrasound": {"Findings": "Ruptured uterus."}})])
    {'CBC': 'WBC: High; Platelets: Normal', 'CBC / WBC': 'High', 'CBC / Platelets': 'Normal', \
'Ultrasound': 'Ruptured uterus.'}
    """
    entries: dict[str, str] = {}

    def walk(value: Any, path: list[str], add: bool = True) -> None:
        text = _join(_flatten(value))
        if add and path and text:
            label = " / ".join(path)
            entries[label] = _join([entries[label], text]) if label in entries else text
        if isinstance(value, Mapping):
            for key, sub in value.items():
                name = _label(key)
                if name.lower() == "findings" or not name:
                    walk(sub, path, add=False)  # already in the parent's text
                else:
                    walk(sub, [*path, name])

    for section_name, section in sections:
        if isinstance(section, Mapping):
            walk(section, [])
        elif _as_text(section):
            walk(section, [section_name])
    return entries


def _all_results(sections: Sequence[tuple[str, Any]]) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """``(tests, unmapped, order)``: catalogue results plus every case result under ``case:<label>``."""
    tests, unmapped, order = _map_tests(section for _, section in sections)
    for label, text in _case_entries(sections).items():
        tests[CASE_PREFIX + label] = text
    return tests, unmapped, order


def _asks_itself(topic: str) -> bool:
    """Whether the oracle's question for ``topic`` is understood as that topic alone (keywords only)."""
    return _MATCHER.match(TOPICS[topic].questions[0]).topics == (topic,)


def _symptom_topic(text: str, used: Iterable[str]) -> str | None:
    """The first topic (not the chief complaint, not yet used) that ``text`` names by keyword."""
    taken = set(used)
    for topic in _MATCHER.match(text).topics:
        if topic != "chief_complaint" and topic not in taken:
            return topic
    return None


def _require(mapping: Any, key: str, where: str) -> Any:
    if not isinstance(mapping, Mapping) or key not in mapping:
        raise TaskFormatError(f"{where}: missing {key!r} (expected AgentClinic's OSCE_Examination format)")
    return mapping[key]


def _row_to_case(row: Mapping[str, Any], number: int, where: str) -> Case:
    osce = _require(row, "OSCE_Examination", where)
    actor = _require(osce, "Patient_Actor", where)
    diagnosis = _require(osce, "Correct_Diagnosis", where)
    if not isinstance(diagnosis, str) or not diagnosis.strip():
        raise TaskFormatError(f"{where}: 'Correct_Diagnosis' must be a non-empty string")
    if not isinstance(actor, Mapping):
        raise TaskFormatError(f"{where}: 'Patient_Actor' must be an object")
    diagnosis = diagnosis.strip()
    names = _diagnosis_names(diagnosis)
    raw_symptoms = actor.get("Symptoms")
    symptoms: Mapping[str, Any] = raw_symptoms if isinstance(raw_symptoms, Mapping) else actor
    demographics = _as_text(actor.get("Demographics", ""))
    age, sex, defaulted = _parse_demographics(  # the demographics line, then the history for what it lacks
        demographics, _as_text(actor.get("History", "")), _as_text(symptoms.get("Primary_Symptom", "")))

    primary = _without_diagnosis(_as_text(symptoms.get("Primary_Symptom", "")), names).rstrip(".")
    complaint = (primary[0].lower() + primary[1:]) if primary else "some symptoms I've been having"

    facts: dict[str, Fact] = {}
    unmapped_symptoms: list[str] = []
    history = _without_diagnosis(_as_text(actor.get("History", "")), names)
    secondary = symptoms.get("Secondary_Symptoms", ())
    if isinstance(secondary, str):
        secondary = [secondary]
    review = _as_text(actor.get("Review_of_Systems", ""))
    for item in [*map(_as_text, secondary), *_SENTENCE.split(review)]:
        item = _without_diagnosis(item, names)
        if not item or _UNINFORMATIVE.search(item):
            continue
        topic = _symptom_topic(item, [*facts, "onset"])
        if topic is None:
            unmapped_symptoms.append(item.rstrip("."))
        else:
            facts[topic] = _fact(topic, item)
    onset = " ".join(
        p
        for p in (
            _sentence(history) if history else "",
            f"Other symptoms: {'; '.join(unmapped_symptoms)}." if unmapped_symptoms else "",
        )
        if p
    )
    if onset:
        facts = {"onset": _fact("onset", onset), **facts}

    past = _without_diagnosis(_as_text(actor.get("Past_Medical_History", "")), names)
    if past and not _UNINFORMATIVE.search(past):
        facts.setdefault("past_medical_history", _fact("past_medical_history", past))
    social = _without_diagnosis(_as_text(actor.get("Social_History", "")), names)
    if social and not _UNINFORMATIVE.search(social):
        topic = next((k for k in _SOCIAL if _KEYWORDS[k].search(social) and k not in facts), "occupation")
        facts.setdefault(topic, _fact(topic, social))

    sections = [("Test Results", osce.get("Test_Results", {})),
                ("Physical Examination", osce.get("Physical_Examination_Findings", {}))]
    extra: dict[str, Any] = {
        "case_text": f"{demographics} {_as_text(actor.get('History', ''))}" if age >= 12 else "",
        "layout": "medqa",
        "objective": _as_text(osce.get("Objective_for_Doctor", "")),
        "demographics": demographics,
        "unmapped_symptoms": unmapped_symptoms,
    }
    return _finish_case(number, diagnosis, age, sex, defaulted, complaint, facts, sections, extra)


def _finish_case(number: int, diagnosis: str, age: int, sex: str, defaulted: list[str], complaint: str,
                 facts: dict[str, Fact], sections: Sequence[tuple[str, Any]], extra: dict[str, Any]) -> Case:
    """The case: results, key questions and tests, persona, rubric (shared by both layouts)."""
    tests, unmapped_tests, order = _all_results(sections)
    extra["unmapped_tests"] = unmapped_tests
    if sex == "female" and "pregnancy_test" not in tests and _PREGNANT.search(str(extra.get("case_text", ""))):
        tests["pregnancy_test"] = "Positive (the patient is pregnant)."
    extra.pop("case_text", None)
    usable = [k for k in order if sex == "female" or k not in _FEMALE_ONLY]
    key_tests = tuple(usable[:MAX_KEY_TESTS])

    present = [t for t, f in facts.items() if f.present and _asks_itself(t)]
    ranked = [t for category in ("hpi", "symptom") for t in present if TOPICS[t].category == category]
    key_questions = tuple(ranked[:MAX_KEY_QUESTIONS])
    red_flags: tuple[str, ...] = ()

    rng = np.random.default_rng(number)
    persona = draw_persona(rng, age)
    first = FEMALE_NAMES if sex == "female" else MALE_NAMES
    name = f"{first[int(rng.integers(len(first)))]} {SURNAMES[int(rng.integers(len(SURNAMES)))]}"
    rubric = build_rubric(
        diagnosis=diagnosis,
        key_questions=key_questions,
        red_flags=red_flags,
        key_tests=key_tests,
        plan=PLAN,
        harmful=(),
        tests=tests,
    )
    if defaulted:
        extra["defaulted"] = defaulted
    return Case(
        id=f"agentclinic/{number}",
        condition=_slug(diagnosis),
        diagnosis=diagnosis,
        synonyms=(),
        specialty="agentclinic",
        name=name,
        age=age,
        sex=sex,
        complaint=complaint,
        persona=persona,
        facts=facts,
        tests=tests,
        key_questions=key_questions,
        red_flags=red_flags,
        key_tests=key_tests,
        plan=PLAN,
        harmful=(),
        differential=(),
        rubric=rubric,
        source="agentclinic",
        extra=extra,
    )


# -- the NEJM layout ---------------------------------------------------------------------------------------
NEJM_KEYS = ("question", "patient_info", "physical_exams", "answers")
_ROLE_PREFIX = re.compile(r"^\s*for your role as (?:a|the) patient,?\s*", re.I)
_BULLET = re.compile(r"(?:^|\s)(?:\d{1,2}\.|-|•)\s+")
_HEADER_WORDS = 8
_HEADER_HINT = re.compile(r"(?i)\b(?:results?|findings|stud(?:y|ies)|testing|tests|exam\w*|imaging|laborator\w*|labs?"
                          r"|biops\w*|patholog\w*|readings|workup|investigations|scans?)\b")
_SECOND_PERSON = [
    (r"\byou are\b", "I am"), (r"\byou were\b", "I was"), (r"\byou've\b", "I've"), (r"\byou're\b", "I'm"),
    (r"\byou have\b", "I have"), (r"\byou had\b", "I had"), (r"\byour\b", "my"), (r"\byourself\b", "myself"),
    (r"\byou\b", "I"),
]


def _first_person(text: str) -> str:
    """The patient brief told in the first person ("you have noticed your rash" -> "I have noticed my rash")."""
    text = _ROLE_PREFIX.sub("", text)
    for pattern, repl in _SECOND_PERSON:
        text = re.sub(pattern, repl, text, flags=re.I)
    return re.sub(r"\bme\b(?= (?:am|have|had|was)\b)", "I", text)


def _nejm_results(text: str) -> dict[str, Any]:
    """The physical-exam text of a NEJM case as ``{group: {name: finding}}`` (numbered or dashed items).

    >>> _nejm_results("Lab results: - Eosinophilia present - HIV test: Negative Imaging: - CT neck: Nodes")
    {'Lab results': {'Findings': 'Eosinophilia present', 'HIV test': 'Negative'}, 'Imaging': {'CT neck': 'Nodes'}}
    """
    groups: dict[str, dict[str, str]] = {}
    group = ""  # items before any header stand on their own
    for raw in _BULLET.split(text):
        item = raw.strip()
        if not item:
            continue
        # an item may end with the header of the next group: "HIV: Negative Imaging results:"
        if item.endswith(":"):
            words = item[:-1].split()
            cut = next((k for k in range(len(words) - 1, -1, -1) if words[k][:1].isupper()
                        and _HEADER_HINT.search(" ".join(words[k:]))), None)
            if cut is None and len(words) <= _HEADER_WORDS:
                cut = 0
            if cut is None:
                continue  # a long introduction ("The information extracted ... includes:")
            before = " ".join(words[:cut])
            if before:
                _nejm_put(groups, group, before)
            if len(words) - cut <= _HEADER_WORDS:
                group = " ".join(words[cut:])
            continue
        _nejm_put(groups, group, item)
    out: dict[str, Any] = dict(groups.pop("", {}))
    if "Findings" in out:
        out["Examination and test findings"] = out.pop("Findings")
    out.update({g: items for g, items in groups.items() if items})
    return out


def _nejm_put(groups: dict[str, dict[str, str]], group: str, item: str) -> None:
    items = groups.setdefault(group, {})
    name, sep, value = item.partition(":")
    if sep and value.strip() and 0 < len(name.split()) <= 12:
        key = name.strip()
        items[key] = _join([items[key], value.strip()]) if key in items else value.strip()
    else:
        items["Findings"] = _join([items["Findings"], item]) if "Findings" in items else item


def _nejm_row_to_case(row: Mapping[str, Any], number: int, where: str) -> Case:
    for key in NEJM_KEYS:
        if key not in row:
            raise TaskFormatError(
                f"{where}: missing {key!r} (expected AgentClinic's NEJM format: {', '.join(NEJM_KEYS)})")
    answers = row["answers"]
    correct = [a.get("text") for a in answers if isinstance(a, Mapping) and a.get("correct")] if isinstance(
        answers, list) else []
    if not correct or not isinstance(correct[0], str) or not correct[0].strip():
        raise TaskFormatError(f"{where}: 'answers' needs one {{'text', 'correct': true}} item")
    diagnosis = correct[0].strip()
    names = _diagnosis_names(diagnosis)
    brief = _as_text(row["patient_info"]).replace("**", "")
    question = _as_text(row["question"])
    age, sex, defaulted = _parse_demographics(brief, question)
    told = _without_diagnosis(_first_person(brief), names)
    sentences = [x for x in _SENTENCE.split(told) if x.strip()]
    complaint = "some symptoms I've been having"
    for sentence in sentences[:2]:
        sentence = sentence.rstrip(".")
        found = (re.search(r"\b(?:who|and) (?:has|have|had|is|am|was)\s+(.*)$", sentence, re.I)
                 or re.search(r"\bwhose\s+(.*)$", sentence, re.I)
                 or re.search(r"^I(?: have|'ve| had)\s+(.*)$", sentence, re.I))
        if found and len(found.group(1).split()) >= 2:
            complaint = ("my " if found.group(0).lower().startswith("whose") else "") + found.group(1)
            break
    facts: dict[str, Fact] = {}
    if told:
        facts["onset"] = _fact("onset", told)
    for sentence in sentences[1:]:
        if _UNINFORMATIVE.search(sentence) or re.search(r"\b(?:test|reading|result)s?\b", sentence, re.I):
            continue
        topic = _symptom_topic(sentence, [*facts])
        if topic is not None:
            facts[topic] = _fact(topic, sentence)
    sections = [("Test Results", _nejm_results(_as_text(row["physical_exams"])))]
    image_url = row.get("image_url")
    extra: dict[str, Any] = {
        "case_text": brief if age >= 12 else "",
        "layout": "nejm",
        "objective": "What is the most likely diagnosis?",
        "question": question,
        "choices": [a.get("text") for a in answers if isinstance(a, Mapping)],
        "image_url": image_url if isinstance(image_url, str) else None,
        "image_case": isinstance(image_url, str) and bool(image_url.strip()),
        "demographics": "",
        "unmapped_symptoms": [],
    }
    if "type" in row:
        extra["type"] = row["type"]
    return _finish_case(number, diagnosis, age, sex, defaulted, complaint, facts, sections, extra)


def _any_row_to_case(row: Any, number: int, where: str) -> Case:
    if isinstance(row, Mapping) and "OSCE_Examination" not in row and "question" in row:
        return _nejm_row_to_case(row, number, where)
    return _row_to_case(row, number, where)


def load_agentclinic(path: str | os.PathLike[str]) -> list[Case]:
    """The cases of an AgentClinic JSONL file, one per line, ids ``agentclinic/<line number>``.

    Both layouts of AgentClinic's files are read, line by line: the OSCE layout of ``agentclinic_medqa.jsonl``
    and ``agentclinic_medqa_extended.jsonl`` (``{"OSCE_Examination": {...}}``) and the NEJM layout of
    ``agentclinic_nejm.jsonl`` and ``agentclinic_nejm_extended.jsonl`` (``question``, ``patient_info``,
    ``physical_exams``, ``answers``, ``image_url``, and ``type`` in the extended file). A NEJM case is text
    only here: its ``image_url`` is kept in ``extra["image_url"]`` and the case flagged
    ``extra["image_case"]`` (the image is not shown to the doctor); the answer choices are in
    ``extra["choices"]``. ``extra["layout"]`` says which layout a case came from.

    Raises:
        FileNotFoundError: no such file (the message has the absolute path).
        TaskFormatError: a line in neither layout (names the file and line), or no cases at all.
    """
    cases = [_any_row_to_case(row, number, f"{path}:{number}") for number, row in read_jsonl(path)]
    if not cases:
        raise TaskFormatError(f"{path}: no cases found (the file is empty)")
    return cases


# -- HealthBench rubrics ----------------------------------------------------------------------------------
def _criterion(item: Any, index: int, where: str) -> Criterion:
    if not isinstance(item, Mapping) or not isinstance(item.get("criterion"), str) or not item["criterion"].strip():
        raise TaskFormatError(f"{where}: rubrics[{index}] needs a non-empty 'criterion' string")
    points = item.get("points")
    if isinstance(points, bool) or not isinstance(points, (int, float)):
        raise TaskFormatError(f"{where}: rubrics[{index}] 'points' must be a number, got {points!r}")
    if not -10 <= points <= 10:  # 0-point items are accepted, as in HealthBench's files
        raise TaskFormatError(f"{where}: rubrics[{index}] 'points' must be in [-10, 10], got {points}")
    tags = item.get("tags", ())
    if isinstance(tags, str) or not all(isinstance(t, str) for t in tags):
        raise TaskFormatError(f"{where}: rubrics[{index}] 'tags' must be a list of strings")
    return Criterion(f"hb:{index}", item["criterion"].strip(), float(points), "judge", (), tuple(tags))


def load_healthbench_rubrics(path: str | os.PathLike[str]) -> dict[str, tuple[Criterion, ...]]:
    """HealthBench-style rubrics by the id of their row (``prompt_id``, or ``case_id``).

    Each rubric item becomes a free-text criterion ``hb:<index>`` (kind ``"judge"``).

    Raises:
        FileNotFoundError: no such file.
        TaskFormatError: a row without an id or rubrics, points outside ``[-10, 10]``, no positive
            criterion, a repeated id (names the file and line).
    """
    rubrics: dict[str, tuple[Criterion, ...]] = {}
    for number, row in read_jsonl(path):
        where = f"{path}:{number}"
        row_id = row.get("prompt_id", row.get("case_id"))
        if not isinstance(row_id, str) or not row_id:
            raise TaskFormatError(f"{where}: a rubric row needs a 'prompt_id' or 'case_id' string; keys: {sorted(row)}")
        items = row.get("rubrics")
        if not isinstance(items, list) or not items:
            raise TaskFormatError(f"{where}: 'rubrics' must be a non-empty list of {{criterion, points, tags}}")
        criteria = tuple(_criterion(item, index, where) for index, item in enumerate(items))
        if not any(c.points > 0 for c in criteria):
            raise TaskFormatError(f"{where}: the rubric of {row_id!r} needs a criterion with positive points")
        if row_id in rubrics:
            raise TaskFormatError(f"{where}: a second rubric for {row_id!r}")
        rubrics[row_id] = criteria
    if not rubrics:
        raise TaskFormatError(f"{path}: no rubrics found (the file is empty)")
    return rubrics


def attach_rubrics(cases: Sequence[Case], path: str | os.PathLike[str]) -> list[Case]:
    """``cases`` with the rubric of each case named in the rubric file replaced by the file's.

    Raises:
        ValueError: a rubric row names no case (with the closest case id).
    """
    from agentrl.core.choices import did_you_mean

    rubrics = load_healthbench_rubrics(path)
    ids = [case.id for case in cases]
    unknown = [row_id for row_id in rubrics if row_id not in set(ids)]
    if unknown:
        hints = ", ".join(f"{row_id!r}{did_you_mean(row_id, ids)}" for row_id in unknown[:5])
        raise ValueError(f"{Path(path)}: {len(unknown)} rubric id(s) match no case: {hints}")
    return [dataclasses.replace(case, rubric=rubrics[case.id]) if case.id in rubrics else case for case in cases]
