"""The measurement unit: answers ``REQUEST TEST: <name>`` from the case.

A case's results come in two kinds of keys (``Case.tests``): catalogue keys (``"cbc"``), the results
that resolve to a :class:`~agentrl.envs.consult.catalog.TestSpec`, and ``"case:<label>"`` keys, every
result of a loaded case under its own name path (``"case:Blood Work / Complete Blood Count / WBC"``).
A request is answered, in this order:

1. by the case's own results whose name (any part of the path) is the requested name;
2. by the catalogue test the name resolves to (name or synonym; case, punctuation and "x-ray"/"xray"
   ignored; small typos forgiven) when the case has that test's result;
3. by the case's results that resolve to that catalogue test, or that share a distinctive word with
   the request (``"pelvic ultrasound"`` finds the case's ``"Ultrasound"``; generic words such as
   "test", "blood" or "level" do not count), or whose name is a close spelling of it;
4. by the catalogue test's *normal* result, only when no result of the case could match;
5. else an error that names the closest tests.

A case result is returned verbatim under its own label (analyte names kept). A test that does not
apply to this patient (a pelvic test for a male patient) is refused.

>>> resolve_test("Chest X-ray").key, resolve_test("FBC").key, resolve_test("troponinn").key
('chest_xray', 'cbc', 'troponin')
>>> resolve_test("brain transplant") is None
True
>>> run_test("CXR", {"chest_xray": "Right lower lobe consolidation."}, sex="male").text
'[result] chest X-ray: Right lower lobe consolidation.'
>>> run_test("pelvic ultrasound", {"case:Imaging / Ultrasound": "Ruptured uterus."}, sex="female").text
'[result] Imaging / Ultrasound: Ruptured uterus.'
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from agentrl.envs.consult.catalog import TESTS, TestSpec, normalize_test_name

__all__ = ["CASE_PREFIX", "TestOutcome", "case_results", "could_match", "resolve_test", "run_test", "suggest_tests"]

#: the prefix of a case's own result keys in ``Case.tests``
CASE_PREFIX = "case:"

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
    key = _resolve_key(name)
    return None if key is None else TESTS[key]


@functools.lru_cache(maxsize=65_536)
def _resolve_key(name: str) -> str | None:
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
            return _BY_NAME[candidate]
    for candidate in candidates:
        if len(candidate) >= 4:
            close = difflib.get_close_matches(candidate, list(_BY_NAME), n=1, cutoff=0.88)
            if close:
                return _BY_NAME[close[0]]
    return None


def suggest_tests(name: str, n: int = 3) -> list[str]:
    """Names of the tests closest to ``name``."""
    close = difflib.get_close_matches(normalize_test_name(name), list(_BY_NAME), n=n * 3, cutoff=0.4)
    return list(dict.fromkeys(TESTS[_BY_NAME[c]].name for c in close))[:n]


_GENERIC = frozenset(
    "a an and the of for with to in on at by from or test tests testing exam examination examinations assessment "
    "evaluation level levels serum plasma blood scan scans study studies panel count counts finding findings "
    "profile analysis screen screening result results report reading readings measurement measurements function "
    "general physical sign signs routine full complete basic imaging image images lab labs laboratory workup other "
    "additional repeat initial follow up left right bilateral total value values specimen sample status "
    "please order do get some perform check".split()
)
# words that name the same thing, mapped to one spelling before comparing
_CANON = {
    "us": "ultrasound", "ultrasonography": "ultrasound", "sonography": "ultrasound", "sonogram": "ultrasound",
    "ultrasonogram": "ultrasound", "echography": "ultrasound", "usg": "ultrasound",
    "radiograph": "xray", "radiography": "xray", "radiographs": "xray", "film": "xray", "films": "xray",
    "computed": "ct", "tomography": "ct", "cat": "ct",
    "magnetic": "mri", "resonance": "mri", "mr": "mri",
    "ekg": "ecg", "electrocardiogram": "ecg", "electrocardiography": "ecg",
    "echocardiography": "echocardiogram", "echo": "echocardiogram",
    "haemoglobin": "hemoglobin", "hb": "hemoglobin", "hgb": "hemoglobin",
    "leukocytes": "wbc", "leucocytes": "wbc", "leukocyte": "wbc",
    "abdomen": "abdominal", "abdo": "abdominal", "pelvis": "pelvic", "brain": "head", "cranial": "head",
    "thorax": "chest", "thoracic": "chest", "lungs": "lung", "pulmonary": "lung", "kidneys": "kidney",
    "renal": "kidney", "hepatic": "liver", "cardiac": "heart", "neurological": "neuro", "neurologic": "neuro",
    "biopsies": "biopsy", "cultures": "culture", "antibodies": "antibody", "urinary": "urine",
    "ctg": "cardiotocography", "cardiotocogram": "cardiotocography", "eeg": "electroencephalogram",
    "emg": "electromyography", "ncs": "nerve", "cxr": "xray", "tte": "echocardiogram", "tee": "echocardiogram",
}
# imaging and procedure words: a request that names one only matches a case result that names it too
_MODALITIES = frozenset(
    "ultrasound ct mri xray ecg echocardiogram biopsy culture endoscopy colonoscopy doppler angiography "
    "angiogram scintigraphy pet cardiotocography electroencephalogram electromyography spirometry swab "
    "puncture aspiration cystoscopy bronchoscopy laparoscopy mammography dexa".split()
)


@functools.lru_cache(maxsize=65_536)
def _tokens(text: str) -> frozenset[str]:
    """Distinctive words of a test name, with synonyms folded (generic words dropped)."""
    words = re.findall(r"[a-z0-9]+", normalize_test_name(text))
    return frozenset({_CANON.get(w, w) for w in words} - _GENERIC)


def _same_name(a: str, b: str) -> bool:
    """Two names of the same thing: equal once normalised, or the same distinctive words ("haemoglobin", "Hb")."""
    if normalize_test_name(a) == normalize_test_name(b):
        return True
    ta = _canon_words(a)
    return bool(ta) and ta == _canon_words(b)


_FILLER = frozenset("a an the of for test tests level levels serum please".split())


@functools.lru_cache(maxsize=65_536)
def _canon_words(text: str) -> tuple[str, ...]:
    """A name's words with synonyms folded and filler words dropped, in order."""
    return tuple(_CANON.get(w, w) for w in re.findall(r"[a-z0-9]+", normalize_test_name(text)) if w not in _FILLER)


def _label_parts(label: str) -> list[str]:
    return [p.strip() for p in label.split(" / ") if p.strip()]


def could_match(name: str, label: str) -> bool:
    """Whether a request ``name`` could mean the case result ``label`` (a path ``"A / B"``).

    True when a part of the label is the name, resolves to the same catalogue test, or shares a
    distinctive word with it (and, when the request names a modality such as "ultrasound", that one).

    >>> could_match("pelvic ultrasound", "Imaging / Ultrasound"), could_match("CBC", "Blood / Complete Blood Count")
    (True, True)
    >>> could_match("chest X-ray", "Blood Tests / Troponin"), could_match("abdominal ultrasound", "Abdominal Exam")
    (False, False)
    """
    wanted = normalize_test_name(name)
    spec = resolve_test(name)
    tokens = _tokens(name)
    for part in _label_parts(label):
        if normalize_test_name(part) == wanted:
            return True
        part_spec = resolve_test(part)
        if spec is not None and part_spec is not None and part_spec.key == spec.key:
            return True
    return _shares(tokens, _tokens(label)) > 0


def _shares(request: frozenset[str], label: frozenset[str]) -> int:
    """Distinctive words in common, 0 when the request names a modality the label lacks."""
    wanted = request & _MODALITIES
    if wanted and not wanted & label:
        return 0
    return len(request & label)


def case_results(results: Mapping[str, str]) -> dict[str, str]:
    """The case's own results of a ``Case.tests`` mapping: label -> verbatim text."""
    return {k[len(CASE_PREFIX):]: v for k, v in results.items() if k.startswith(CASE_PREFIX)}


def _outermost(labels: list[str]) -> list[str]:
    """``labels`` without those nested in another one (``"A / B"`` goes when ``"A"`` is there)."""
    chosen = set(labels)
    return [lab for lab in labels
            if not any(other != lab and lab.startswith(other + " / ") for other in chosen)]


def _case_match(name: str, own: Mapping[str, str], spec: TestSpec | None) -> list[str]:
    """The labels of the case results a request means, best tier first (empty when none could)."""
    if not own:
        return []
    wanted = normalize_test_name(name)
    labels = list(own)
    # 1. the case's own name: the last part first (an analyte), then any part (a group or a test)
    exact = [lab for lab in labels if _same_name(_label_parts(lab)[-1], name) or normalize_test_name(lab) == wanted]
    if not exact:
        exact = [lab for lab in labels if any(_same_name(p, name) for p in _label_parts(lab))]
    if exact:
        return _outermost(exact)
    # 2. a part that resolves to the same catalogue test
    if spec is not None:
        same = [lab for lab in labels if any((s := resolve_test(p)) is not None and s.key == spec.key
                                             for p in _label_parts(lab))]
        if same:
            return _outermost(same)
    # 3. distinctive words in common: the labels sharing the most
    tokens = _tokens(name)
    if tokens:
        scored = [(_shares(tokens, _tokens(lab)), lab) for lab in labels]
        best = max(score for score, _ in scored)
        if best > 0:
            return _outermost([lab for score, lab in scored if score == best])
    # 4. a close spelling of a part
    parts = {normalize_test_name(p): lab for lab in labels for p in _label_parts(lab)}
    close = difflib.get_close_matches(wanted, list(parts), n=1, cutoff=0.8) if len(wanted) >= 4 else []
    return _outermost([parts[close[0]]]) if close else []


def _case_spec(label: str) -> TestSpec:
    """The catalogue test a case result is filed under, or a spec of its own (key ``case:<label>``).

    The outermost part of the label that resolves wins, as in the loader.
    """
    for part in _label_parts(label):
        spec = resolve_test(part)
        if spec is not None:
            return spec
    return TestSpec(CASE_PREFIX + label, label, (), "", "case")


def run_test(name: str, results: Mapping[str, str], *, sex: str) -> TestOutcome:
    """Answer one request from a case's ``results`` (catalogue key or ``case:<label>`` -> finding)."""
    spec = resolve_test(name)
    own = case_results(results)
    if spec is not None and spec.key in results:
        exact = [lab for lab in own if _same_name(_label_parts(lab)[-1], name)]
        if not exact:  # the catalogue result, unless the case names this exact result itself
            if spec.key in _FEMALE_ONLY and sex != "female":
                return TestOutcome(None, "", f"the {spec.name} does not apply to this patient")
            return TestOutcome(spec, f"[result] {spec.name}: {results[spec.key]}")
    labels = _case_match(name, own, spec)
    if labels:
        lines = [f"[result] {lab}: {own[lab]}" for lab in labels]
        return TestOutcome(_case_spec(labels[0]), "\n".join(lines))
    if spec is None:
        suggestions = suggest_tests(name)
        hint = f"; did you mean {' or '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        shown = name if len(name) <= 60 else name[:57] + "..."
        return TestOutcome(None, "", f"no test called {shown!r} is available{hint}")
    if spec.key in _FEMALE_ONLY and sex != "female":
        return TestOutcome(None, "", f"the {spec.name} does not apply to this patient")
    return TestOutcome(spec, f"[result] {spec.name}: {results.get(spec.key, spec.normal)}")
