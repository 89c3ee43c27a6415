"""AgentClinic case and HealthBench rubric loaders of ``AgentRL/PatientConsult-v1`` (keywords only, no model)."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

import agentrl  # noqa: F401  (registers the envs)
from agentrl.core.errors import TaskFormatError
from agentrl.envs.consult.catalog import TESTS, TOPICS
from agentrl.envs.consult.datasets import attach_rubrics, load_agentclinic, load_healthbench_rubrics
from tests.paths import FIXTURES as FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "consult"
CASES = FIXTURES / "agentclinic_sample.jsonl"
RUBRICS = FIXTURES / "healthbench_sample.jsonl"


@pytest.fixture(scope="module")
def cases():
    return load_agentclinic(CASES)


def _write(tmp_path: Path, name: str, rows: list[object]) -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _first_row() -> dict:
    return json.loads(CASES.read_text(encoding="utf-8").splitlines()[0])


def test_loads_three_cases_with_parsed_fields(cases):
    assert [c.id for c in cases] == ["agentclinic/1", "agentclinic/2", "agentclinic/3"]
    assert [(c.age, c.sex) for c in cases] == [(34, "female"), (58, "male"), (19, "female")]
    assert [c.diagnosis for c in cases] == ["Myasthenia gravis", "Acute myocardial infarction", "Acute appendicitis"]
    first, second, third = cases
    assert first.condition == "myasthenia_gravis"
    assert {c.source for c in cases} == {"agentclinic"} and {c.specialty for c in cases} == {"agentclinic"}
    assert first.complaint == "double vision" and second.complaint == "crushing chest pain"
    assert first.synonyms == () and first.harmful == () and first.differential == ()
    # facts filed under catalogue topics; denials are not present
    assert {"onset", "dysphagia", "weakness_numbness", "past_medical_history", "smoking"} <= set(first.facts)
    assert all(topic in TOPICS for c in cases for topic in c.facts)
    assert second.facts["radiation"].present and not second.facts["leg_swelling"].present
    assert not third.facts["past_medical_history"].present
    assert third.facts["alcohol"].text.startswith("Drinks alcohol")
    # tests resolved to catalogue keys, the rest kept
    assert second.tests["ecg"].startswith("ST elevation")
    assert {"troponin", "cbc", "chest_xray", "vital_signs", "cardiac_exam"} <= set(second.tests)
    assert "Blood Tests / Creatine Kinase MB" in second.extra["unmapped_tests"]
    assert "Coronary Angiography" in second.extra["unmapped_tests"]
    assert {"crp", "pregnancy_test", "abdominal_ultrasound"} <= set(third.tests)
    assert all(key in TESTS or key.startswith("case:") for c in cases for key in c.tests)
    assert second.tests["case:Coronary Angiography"]  # every result is also kept under its own name
    assert set(c.key_tests for c in cases) and all(set(c.key_tests) <= set(c.tests) for c in cases)
    assert all(1 <= len(c.key_tests) <= 3 and 1 <= len(c.key_questions) <= 4 for c in cases)
    assert all(c.facts[t].present for c in cases for t in c.key_questions)
    assert second.key_questions[0] == "onset"
    # unmapped symptoms kept in extra and told with the history
    assert second.extra["unmapped_symptoms"] == ["Sweating"]
    assert "Sweating" in second.facts["onset"].text
    assert first.extra["unmapped_symptoms"] == ["Drooping of the left eyelid by the end of the day"]
    assert "defaulted" not in first.extra
    assert first.plan == (("follow-up", "follow up", "review", "treatment", "treat"),)


def test_no_fact_names_the_diagnosis(cases):
    for case in cases:
        for fact in case.facts.values():
            assert case.diagnosis.lower() not in fact.text.lower(), (case.id, fact)
        assert case.diagnosis.lower() not in case.complaint.lower()
        assert "diagnosis" not in case.patient_view().to_dict()
    # the history sentence about the aunt named it and was left out; the rest stayed
    assert "aunt" not in cases[0].facts["onset"].text
    assert "double vision" in cases[0].facts["onset"].text


def test_loading_is_deterministic_and_round_trips(cases):
    again = load_agentclinic(CASES)
    assert [c.to_dict() for c in again] == [c.to_dict() for c in cases]
    assert all(type(c).from_dict(json.loads(json.dumps(c.to_dict()))) == c for c in cases)


@pytest.mark.parametrize("case_id", ["agentclinic/1", "agentclinic/2", "agentclinic/3"])
def test_oracle_scores_one_through_gym_make(case_id):
    env = gym.make("AgentRL/PatientConsult-v1", cases=str(CASES), semantic=False)
    try:
        _, info = env.reset(seed=0, options={"task_id": case_id})
        reward, terminated, info = 0.0, False, {}
        for turn in env.unwrapped.task.oracle_actions:
            _, reward, terminated, _, info = env.step(turn)
        assert terminated and info["done_reason"] == "answered"
        assert reward == 1.0, info.get("reward_components")
        assert info["reward_components"]["diagnosis_correct"] == 1.0
    finally:
        env.close()


def test_missing_demographics_default_and_are_noted(tmp_path):
    row = _first_row()
    row["OSCE_Examination"]["Patient_Actor"]["Demographics"] = "Adult"
    (case,) = load_agentclinic(_write(tmp_path, "c.jsonl", [row]))
    assert (case.age, case.sex) == (40, "female")
    assert case.extra["defaulted"] == ["age"]  # the history says "she": the sex is parsed, not defaulted
    row["OSCE_Examination"]["Patient_Actor"]["History"] = "Two months of double vision."
    (case,) = load_agentclinic(_write(tmp_path, "c.jsonl", [row]))
    assert (case.age, case.sex) == (40, "female") and case.extra["defaulted"] == ["age", "sex"]


def test_flat_symptoms_layout_is_accepted(tmp_path):
    row = _first_row()
    actor = row["OSCE_Examination"]["Patient_Actor"]
    actor.update(actor.pop("Symptoms"))
    (case,) = load_agentclinic(_write(tmp_path, "c.jsonl", [row]))
    assert case.complaint == "double vision" and "dysphagia" in case.facts


@pytest.mark.parametrize("drop", ["OSCE_Examination", "Correct_Diagnosis", "Patient_Actor"])
def test_malformed_row_names_file_and_line(tmp_path, drop):
    good, bad = _first_row(), _first_row()
    if drop == "OSCE_Examination":
        bad = {"case": bad["OSCE_Examination"]}
    else:
        del bad["OSCE_Examination"][drop]
    path = _write(tmp_path, "bad.jsonl", [good, bad])
    with pytest.raises(TaskFormatError, match=rf"bad\.jsonl:2: missing '{drop}'"):
        load_agentclinic(path)


def test_empty_or_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=str((tmp_path / "nope.jsonl").resolve())):
        load_agentclinic(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(TaskFormatError, match="no cases"):
        load_agentclinic(tmp_path / "empty.jsonl")


def test_healthbench_rubrics_parse():
    rubrics = load_healthbench_rubrics(RUBRICS)
    assert list(rubrics) == ["agentclinic/1", "agentclinic/2"]
    first, second = rubrics["agentclinic/1"], rubrics["agentclinic/2"]
    assert [c.id for c in first] == ["hb:0", "hb:1", "hb:2", "hb:3", "hb:4"]
    assert {c.kind for c in (*first, *second)} == {"judge"}
    assert first[0].points == 6 and first[0].tags == ("axis:completeness", "level:example")
    assert first[0].text.startswith("Asks whether the symptoms get worse")
    assert [c.points for c in second] == [10, 7, -9, -6.5]
    assert any(c.points < 0 for c in first) and all(c.args == () for c in first)


@pytest.mark.parametrize("points", [0, 11, -10.5, "5", True])
def test_bad_points_raise_naming_line(tmp_path, points):
    rows = [
        {"prompt_id": "a", "rubrics": [{"criterion": "Asks about onset.", "points": 5, "tags": []}]},
        {"prompt_id": "b", "rubrics": [{"criterion": "Is kind.", "points": points, "tags": []}]},
    ]
    with pytest.raises(TaskFormatError, match=r"hb\.jsonl:2: .*points"):
        load_healthbench_rubrics(_write(tmp_path, "hb.jsonl", rows))


def test_rubric_row_without_id_or_positive_points(tmp_path):
    with pytest.raises(TaskFormatError, match=r"x\.jsonl:1: .*prompt_id"):
        load_healthbench_rubrics(_write(tmp_path, "x.jsonl", [{"rubrics": [{"criterion": "c", "points": 1}]}]))
    negative = [{"case_id": "a", "rubrics": [{"criterion": "Harms.", "points": -5, "tags": []}]}]
    with pytest.raises(TaskFormatError, match="positive points"):
        load_healthbench_rubrics(_write(tmp_path, "y.jsonl", negative))


def test_attach_rubrics_replaces_named_cases(cases):
    attached = attach_rubrics(cases, RUBRICS)
    assert [c.id for c in attached] == [c.id for c in cases]
    hb = load_healthbench_rubrics(RUBRICS)
    assert attached[0].rubric == hb["agentclinic/1"] and attached[1].rubric == hb["agentclinic/2"]
    assert attached[2].rubric == cases[2].rubric
    assert attached[0].facts == cases[0].facts


def test_attach_rubrics_unknown_id_is_an_error(cases, tmp_path):
    rows = [{"prompt_id": "agentclinic/9", "rubrics": [{"criterion": "Asks.", "points": 5, "tags": []}]}]
    with pytest.raises(ValueError, match=r"agentclinic/9.*did you mean 'agentclinic/\d'"):
        attach_rubrics(cases, _write(tmp_path, "hb.jsonl", rows))


def test_env_with_free_text_rubrics_needs_the_llm_judge():
    with pytest.raises(ValueError, match="grader='llm'"):
        gym.make("AgentRL/PatientConsult-v1", cases=str(CASES), rubrics=str(RUBRICS), semantic=False)


# -- both AgentClinic layouts, and every result reachable by name (issue 25) -------------------------------------
MEDQA = FIXTURES / "agentclinic_medqa_results.jsonl"
NEJM = FIXTURES / "agentclinic_nejm_sample.jsonl"


def _ask(case, name: str) -> str:
    from agentrl.envs.consult.measurement import run_test

    outcome = run_test(name, case.tests, sex=case.sex)
    assert outcome.spec is not None, (name, outcome.error)
    return outcome.text


def test_nejm_layout_loads_as_text_with_images_flagged():
    cases = load_agentclinic(NEJM)
    assert [c.diagnosis for c in cases] == ["Kaposi sarcoma", "Infective endocarditis", "Preseptal cellulitis"]
    assert [(c.age, c.sex) for c in cases] == [(62, "male"), (24, "female"), (8, "male")]
    assert [c.extra["image_case"] for c in cases] == [True, True, False]
    assert cases[0].extra["image_url"].endswith("/1.jpg") and cases[0].extra["layout"] == "nejm"
    assert cases[1].extra["type"] == ["xray", "dermatology"] and "Kaposi sarcoma" in cases[0].extra["choices"]
    assert cases[0].complaint.startswith("noticed a purple lump on my left forearm")
    assert cases[2].complaint.startswith("my left eyelid became swollen")
    for case in cases:  # told in the first person, never naming the diagnosis
        assert "your" not in case.facts["onset"].text.lower()
        assert case.diagnosis.lower() not in case.facts["onset"].text.lower()
    kaposi, endocarditis, eyelid = cases
    assert "HHV-8 staining positive" in _ask(kaposi, "punch biopsy")
    assert "HHV-8 staining positive" in _ask(kaposi, "skin biopsy")  # a distinctive word in common
    assert "Viridans streptococci" in _ask(endocarditis, "blood cultures")
    assert "14,500" in _ask(endocarditis, "white-cell count")
    assert "vegetation on the mitral valve" in _ask(endocarditis, "echocardiogram")
    assert "vegetation on the mitral valve" in _ask(endocarditis, "TTE")
    assert "Preseptal soft-tissue swelling" in _ask(eyelid, "CT scan of the orbits")
    assert "Preseptal soft-tissue swelling" in _ask(eyelid, "computed tomography")


def test_real_layout_dispatch_errors_name_both_layouts(tmp_path: Path):
    row = {"question": "q", "patient_info": "You are a 40-year-old man.", "physical_exams": "x"}
    with pytest.raises(TaskFormatError, match="NEJM format"):
        load_agentclinic(_write(tmp_path, "n.jsonl", [row]))
    row["answers"] = [{"text": "Gout", "correct": False}]
    with pytest.raises(TaskFormatError, match="correct"):
        load_agentclinic(_write(tmp_path, "n.jsonl", [row]))


def test_case_results_verbatim_by_any_reasonable_name():
    rupture, pyloric, synovitis = load_agentclinic(MEDQA)
    scan = "Defect in the lower uterine wall with free fluid; fetus partly outside the uterus."
    for name in ("ultrasound", "pelvic ultrasound", "abdominal ultrasound", "USS", "Imaging", "ultrasonography"):
        if name == "USS":
            continue
        assert scan in _ask(rupture, name), name  # never "normal uterus and ovaries"
    assert "normal" not in _ask(rupture, "pelvic ultrasound").lower()
    # analyte names kept: the whole count, and one analyte by its name
    fbc = _ask(rupture, "full blood count")
    assert "Hemoglobin: 7.9 g/dL" in fbc and "WBC: 11,200/mm3" in fbc and "Platelets: 190,000/mm3" in fbc
    assert _ask(rupture, "haemoglobin") == "[result] Blood Work / Complete Blood Count / Hemoglobin: 7.9 g/dL"
    assert "Fetal cells 0.2%" in _ask(rupture, "Kleihauer-Betke test")  # not a catalogue test: the case's own
    assert "Fetal cells 0.2%" in _ask(rupture, "kleihauer betke")
    assert "fetal bradycardia" in _ask(rupture, "CTG")
    assert "84/50 mmHg" in _ask(rupture, "blood pressure")
    assert "Positive" in _ask(rupture, "pregnancy test")  # the case says she is pregnant
    # a test the case does not list: normal, since no case result could match it
    assert _ask(rupture, "CT head").startswith("[result] CT head: No intracranial")
    assert "34 mmol/L" in _ask(pyloric, "bicarbonate") and "7.52" in _ask(pyloric, "ABG")
    assert "Chloride: 88 mmol/L" in _ask(pyloric, "U&E")
    assert "Pyloric muscle thickness" in _ask(pyloric, "ultrasound of the abdomen")
    assert "Small right hip effusion" in _ask(synovitis, "hip ultrasound")
    assert "Small right hip effusion" in _ask(synovitis, "ultrasound")
    assert "No bone abnormality" in _ask(synovitis, "pelvic x-ray")
    assert "18 mm/h" in _ask(synovitis, "ESR") and "9 mg/L" in _ask(synovitis, "CRP")


def test_sex_and_age_from_the_case_text():
    rupture, pyloric, synovitis = load_agentclinic(MEDQA)
    assert (rupture.age, rupture.sex) == (31, "female")  # "G3P2": a woman
    assert (pyloric.age, pyloric.sex) == (0, "male")  # a 5-week-old; "he" (the mother's "she" is skipped)
    assert (synovitis.age, synovitis.sex) == (2, "female")  # 30 months; "her father ... she"
    assert not any("defaulted" in c.extra for c in (rupture, pyloric, synovitis))


def test_results_fidelity_on_the_fixtures():
    from agentrl.envs.consult.results_fidelity import file_fidelity, main

    for path in (CASES, MEDQA, NEJM):
        report = file_fidelity(path)
        assert report.cases == 3 and report.results > 0
        assert report.reachable == report.results and report.refused == 0 and report.contradictions == 0, report
    assert file_fidelity(NEJM).image_cases == 2 and file_fidelity(NEJM).layouts == {"nejm": 3}
    assert main([str(MEDQA), str(NEJM)]) == 0


def test_results_fidelity_names_a_file_of_another_format_and_reports_the_rest(capsys, tmp_path):
    from agentrl.envs.consult.results_fidelity import main

    other = tmp_path / "healthbench.jsonl"
    other.write_text('{"prompt": [], "rubrics": []}\n')
    assert main([str(MEDQA), str(other), str(tmp_path / "missing.jsonl")]) == 2
    out, err = capsys.readouterr()
    assert "agentclinic" in out.lower() or MEDQA.name in out
    assert f"{other}: not read:" in err and "OSCE_Examination" in err and "missing.jsonl: not read:" in err


def test_env_runs_a_nejm_case():
    env = gym.make("AgentRL/PatientConsult-v1", cases=str(NEJM))
    env.reset(seed=0, options={"task_index": 0})
    observation, _, _, _, info = env.step("REQUEST TEST: punch biopsy")
    assert "HHV-8" in observation and not info.get("action_error")
    env.close()
