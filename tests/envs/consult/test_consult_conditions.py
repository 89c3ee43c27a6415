"""PatientConsult's condition templates as data: the JSON files load whole, and a broken file says where it broke."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import agentrl
from agentrl.core.errors import AgentRLError
from agentrl.envs.consult.catalog import CATALOG_FILE, LAY_TERMS, TESTS, TOPICS, Topic, load_catalog
from agentrl.envs.consult.conditions import CONDITIONS, ConditionError
from agentrl.envs.consult.conditions.loader import (
    DATA_DIR,
    DATA_FILES,
    ConditionDataError,
    condition_from_record,
    condition_to_record,
    load_condition_file,
    load_conditions,
)
from agentrl.envs.consult.records import DataError, from_record, to_record
from agentrl.envs.consult.tasks import build_case_bank

#: the bank as it was when the templates were Python literals (issue 31): 2 + 20 + 20 conditions
COUNTS = {"core.json": 2, "medicine.json": 20, "surgery_neuro.json": 20}


def test_the_bank_loads_whole() -> None:
    assert len(CONDITIONS) == sum(COUNTS.values()) == 42
    assert {name: len(load_condition_file(DATA_DIR / name)) for name in DATA_FILES} == COUNTS
    assert list(load_conditions()) == list(CONDITIONS)  # file order, then record order
    assert len(build_case_bank()) == 4 * 42
    assert sorted(p.name for p in DATA_DIR.glob("*.json")) == sorted(DATA_FILES)  # no file left unlisted


def test_records_round_trip() -> None:
    """Lists become tuples, objects keep their order; a record written back reads as the same condition."""
    for condition in CONDITIONS.values():
        record = condition_to_record(condition)
        assert json.loads(json.dumps(record)) == record
        assert condition_from_record(record) == condition
    migraine = CONDITIONS["migraine"]
    assert isinstance(migraine.synonyms, tuple) and all(isinstance(v, tuple) for v in migraine.hpi.values())
    assert isinstance(migraine.ages, tuple) and len(migraine.ages) == 2


def test_the_data_files_ship_in_the_wheel() -> None:
    """Every data file matches a package-data pattern of pyproject.toml (what setuptools puts in the wheel)."""
    tomllib = pytest.importorskip("tomllib")
    root = Path(agentrl.__file__).parent
    pyproject = tomllib.loads((root.parent / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = pyproject["tool"]["setuptools"]["package-data"]["agentrl"]
    shipped = {path for pattern in patterns for path in root.glob(pattern)}
    assert {DATA_DIR / name for name in DATA_FILES} <= shipped
    assert CATALOG_FILE in shipped


# -- the catalogue: data/catalog.json, checked by the same record code -------------------------------------------------
def _catalog(tmp_path: Path, change: Any) -> Path:
    document = json.loads(CATALOG_FILE.read_text(encoding="utf-8"))
    change(document)
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_the_catalogue_round_trips_and_loads_whole(tmp_path: Path) -> None:
    topics, tests, lay = load_catalog(_catalog(tmp_path, lambda document: None))
    assert (topics, tests, lay) == (TOPICS, TESTS, LAY_TERMS)
    assert all(from_record(Topic, to_record(t), source="x", what="topic", fix="") == t for t in TOPICS.values())


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda d: d["topics"][3].pop("denial"), r"topic 'location' \(entry 3\):\n  - required field 'denial'"),
        (lambda d: d["topics"][0].update(category="mood"), r"topic 'chief_complaint': category 'mood' is not one of"),
        (lambda d: d["topics"][1].update(keywords="when did ("), r"topic 'onset': its keywords are not a regular"),
        (lambda d: d["tests"].append(dict(d["tests"][0])), r"test 'vital_signs' is defined twice"),
        (lambda d: d["tests"][2].update(invasive="yes"), r"field 'invasive': at invasive, expected a boolean"),
        (lambda d: d["tests"][2].update(kind="xray"), r"kind 'xray' is not one of"),
        (lambda d: d.update(extra=1), r"the top level has"),
        (lambda d: d["lay_terms"].update(oedema=3), r"lay_terms\['oedema'\], expected a string"),
    ],
    ids=["missing-field", "unknown-category", "bad-regex", "repeated-key", "bool-field", "unknown-kind", "top-level",
         "lay-term"],
)
def test_a_malformed_catalogue_names_the_entry_and_the_fix(tmp_path: Path, change: Any, says: str) -> None:
    path = _catalog(tmp_path, change)
    with pytest.raises(DataError, match=says) as caught:
        load_catalog(path)
    assert str(path) in str(caught.value)


def test_a_missing_catalogue_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"catalogue file .* is missing; restore it .*reinstall agentrl-gym"):
        load_catalog(tmp_path / "nope.json")


def _write(folder: Path, name: str, records: list[Any]) -> Path:
    path = folder / name
    path.write_text(json.dumps({"description": "test", "conditions": records}), encoding="utf-8")
    return path


def _record(**changes: Any) -> dict[str, Any]:
    record = condition_to_record(CONDITIONS["migraine"])
    for key, value in changes.items():
        if value is None:
            del record[key]
        else:
            record[key] = value
    return record


@pytest.mark.parametrize(
    ("changes", "field", "says"),
    [
        ({"tests": None}, "tests", "required field 'tests' is missing"),
        ({"name": None}, "name", "required field 'name' is missing"),
        ({"ages": [20, "60"]}, "ages", "at ages[1], expected an integer, got the string '60'"),
        ({"ages": [20, True]}, "ages", "expected an integer, got the boolean true"),
        ({"ages": [20]}, "ages", "expected a list of 2 integers, got a list of 1"),
        ({"synonyms": "migraines"}, "synonyms", "expected a list of strings, got the string 'migraines'"),
        ({"hpi": {"onset": "It began today."}}, "hpi", "at hpi['onset'], expected a list of strings"),
        ({"tests": {"cbc": ["normal"]}}, "tests", "at tests['cbc'], expected a string, got a list of 1"),
        ({"plan": [["rest"], "sleep"]}, "plan", "at plan[1], expected a list of strings"),
        ({"specialty": None, "complaint": 3}, "complaint", "expected a string, got the number 3"),
        ({"optional_symptom": {}}, "optional_symptom", "unknown field 'optional_symptom'; did you mean"),
    ],
)
def test_a_malformed_record_names_file_condition_and_field(
    tmp_path: Path, changes: dict[str, Any], field: str, says: str
) -> None:
    good = condition_to_record(CONDITIONS["acute_appendicitis"])
    path = _write(tmp_path, "bad.json", [good, _record(**changes)])
    with pytest.raises(ConditionDataError) as caught:
        load_condition_file(path)
    message = str(caught.value)
    assert str(path) in message and "condition 'migraine' (entry 1)" in message
    assert f"'{field}'" in message and says in message, message
    assert "fix the file" in message
    assert isinstance(caught.value, ConditionError) and isinstance(caught.value, AgentRLError)
    assert isinstance(caught.value, ValueError)


def test_every_problem_of_a_record_is_listed(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.json", [_record(tests=None, key_tests="cbc", sexes=["female", 1])])
    with pytest.raises(ConditionDataError) as caught:
        load_condition_file(path)
    message = str(caught.value)
    assert "'tests' is missing" in message and "field 'key_tests'" in message and "at sexes[1]" in message


def test_a_record_without_a_key_is_named_by_its_entry(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.json", [_record(key=None), "not a record"])
    with pytest.raises(ConditionDataError, match=r"condition entry 0 \(no 'key'\):\n  - required field 'key'"):
        load_condition_file(path)
    path = _write(tmp_path, "bad.json", ["not a record"])
    with pytest.raises(ConditionDataError, match=r"condition entry 0 .*expected an object of fields"):
        load_condition_file(path)


def test_a_repeated_json_key_is_an_error(tmp_path: Path) -> None:
    """json keeps the last of two equal keys; the loader refuses instead of dropping one silently."""
    text = json.dumps({"description": "x", "conditions": [_record()]}, indent=1)
    path = tmp_path / "bad.json"
    path.write_text(text.replace('"hpi": {', '"hpi": {"onset": ["It began today."], ', 1), encoding="utf-8")
    with pytest.raises(ConditionDataError, match=r"(?s)condition 'migraine'.*field 'hpi': at hpi, the key 'onset'"):
        load_condition_file(path)
    path.write_text(text.replace('"name": ', '"name": "x", "name": ', 1), encoding="utf-8")
    with pytest.raises(ConditionDataError, match="field 'name' appears twice"):
        load_condition_file(path)


def test_a_rule_breaking_condition_names_the_file(tmp_path: Path) -> None:
    """Well-typed but against the rules of validate_condition (an unknown topic): the file and condition named."""
    path = _write(tmp_path, "bad.json", [_record(symptoms={"not_a_topic": ["I feel odd."]})])
    with pytest.raises(ConditionDataError, match=re.escape(f"{path}: entry 0: condition 'migraine'")) as caught:
        load_condition_file(path)
    assert "unknown topic 'not_a_topic'" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"conditions": [', "not valid JSON (line 1, column"),
        ("[]", 'expected an object {"description": ..., "conditions": [...]}'),
        ('{"description": "x"}', 'expected an object {"description": ..., "conditions": [...]}'),
        ('{"conditions": [], "condition": []}', "found ['condition']"),
        ('{"conditions": [], "description": 1}', "a description that is not a string"),
    ],
)
def test_a_malformed_file_names_the_file(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConditionDataError, match=re.escape(says)) as caught:
        load_condition_file(path)
    assert str(caught.value).startswith(f"{path}: ")


def test_a_missing_file_raises(tmp_path: Path) -> None:
    for name in DATA_FILES:
        shutil.copy(DATA_DIR / name, tmp_path / name)
    assert load_conditions(tmp_path) == CONDITIONS
    (tmp_path / "medicine.json").unlink()
    with pytest.raises(ConditionDataError, match=r"condition data file .*medicine\.json is missing") as caught:
        load_conditions(tmp_path)
    assert "reinstall agentrl-gym" in str(caught.value) and "restore it" in str(caught.value)


def test_a_key_in_two_files_raises(tmp_path: Path) -> None:
    _write(tmp_path, "a.json", [_record()])
    _write(tmp_path, "b.json", [_record()])
    with pytest.raises(ConditionDataError, match=r"b\.json: condition 'migraine' is already defined in .*a\.json"):
        load_conditions(tmp_path, ("a.json", "b.json"))


# Importing the package reads the shipped files: one that cannot be read fails the import, naming it.
_IMPORT_WITHOUT = r"""
import pathlib, sys
read = pathlib.Path.read_text
def read_text(self, *args, **kwargs):
    if self.name == sys.argv[1]:
        raise FileNotFoundError(2, "No such file or directory", str(self))
    return read(self, *args, **kwargs)
pathlib.Path.read_text = read_text
import agentrl.envs.consult.conditions
"""


def test_importing_without_a_data_file_raises() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_WITHOUT, "surgery_neuro.json"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert "ConditionDataError: condition data file" in result.stderr
    assert "surgery_neuro.json is missing" in result.stderr


def test_the_package_imports_nothing_heavy() -> None:
    """agentrl.envs.consult is a regular package whose __init__ loads neither the case bank nor the env."""
    code = (
        "import sys, agentrl.envs.consult as p; print(p.__file__); "
        "print(sorted(m for m in sys.modules if m.startswith('agentrl.envs.consult.')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    init, loaded = result.stdout.strip().splitlines()
    assert init.endswith("__init__.py") and loaded == "[]"
