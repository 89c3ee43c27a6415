"""OSWorld task format, validation and evaluate() semantics: pure Python, no desktop, no network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentrl.core.errors import DependencyNotInstalled, TaskFormatError
from agentrl.envs.osworld import evaluators
from agentrl.envs.osworld.evaluators import calc, general
from agentrl.envs.osworld.tasks.evaluate import evaluate
from agentrl.envs.osworld.tasks.format import (
    SUPPORTED_GETTERS,
    SUPPORTED_SETUP_TYPES,
    OSWorldTask,
    SetupStep,
    load_task,
    load_task_dir,
    validate,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
FILE_TASK = "0b1c2d3e-1111-4a00-9000-000000000001"
DIR_TASK = "0b1c2d3e-2222-4a00-9000-000000000002"
TERMINAL_TASK = "0b1c2d3e-3333-4a00-9000-000000000003"
INFEASIBLE_TASK = "0b1c2d3e-4444-4a00-9000-000000000004"
AND_TASK = "0b1c2d3e-5555-4a00-9000-000000000005"
OR_TASK = "0b1c2d3e-6666-4a00-9000-000000000006"
TABLE_TASK = "0b1c2d3e-7777-4a00-9000-000000000007"


@pytest.fixture(scope="module")
def tasks() -> dict[str, OSWorldTask]:
    return {t.id: t for t in load_task_dir(FIXTURES)}


def files_getter(root: Path):
    """A filesystem-backed getter: vm_file paths map under ``root``; missing files give None like OSWorld."""

    def get(spec: dict[str, Any]) -> Any:
        assert spec["type"] != "rule", "rule getters must be resolved by evaluate()"
        if spec["type"] == "vm_file":
            local = root / spec["path"].lstrip("/")
            return str(local) if local.exists() else None
        raise AssertionError(f"unexpected getter {spec}")

    return get


def dict_getter(values: dict[str, Any]):
    def get(spec: dict[str, Any]) -> Any:
        assert spec["type"] != "rule"
        return values[spec["type"]]

    return get


# -- loading -------------------------------------------------------------------------------------


def test_fixtures_load_sorted_and_validate(tasks: dict[str, OSWorldTask]) -> None:
    loaded = load_task_dir(FIXTURES)
    assert len(loaded) >= 7
    paths = sorted(FIXTURES.rglob("*.json"))
    assert [t.id for t in loaded] == [json.loads(p.read_text())["id"] for p in paths]
    for task in loaded:
        assert validate(task) == []
    file_task = tasks[FILE_TASK]
    assert file_task.snapshot == "os" and file_task.related_apps == ("os",)
    assert file_task.config[0] == SetupStep("execute", {"command": ["bash", "-c", "rm -f /home/user/Desktop/note.txt"]})
    assert file_task.raw["trajectory"] == "trajectories/"
    assert tasks[AND_TASK].evaluator.multi and tasks[AND_TASK].evaluator.postconfig[0].type == "close_window"
    assert tasks[OR_TASK].evaluator.conj == "or"
    assert tasks[INFEASIBLE_TASK].evaluator.infeasible
    assert tasks[TABLE_TASK].evaluator.options == (
        {"rules": [{"type": "sheet_data", "sheet_idx0": "RI0", "sheet_idx1": "EI0"}]},
    )


def test_load_task_errors_name_file_and_field(tmp_path: Path) -> None:
    bad_json = tmp_path / "broken.json"
    bad_json.write_text("{not json")
    with pytest.raises(TaskFormatError, match=r"broken\.json: not valid JSON"):
        load_task(bad_json)
    no_func = tmp_path / "nofunc.json"
    no_func.write_text(json.dumps({"id": "x", "instruction": "y", "config": [], "evaluator": {"result": {}}}))
    with pytest.raises(TaskFormatError, match=r"nofunc\.json: field 'evaluator\.func' is missing"):
        load_task(no_func)
    bad_step = tmp_path / "sub" / "step.json"
    bad_step.parent.mkdir()
    bad_step.write_text(
        json.dumps({"id": "x", "instruction": "y", "config": [{"parameters": {}}], "evaluator": {"func": "infeasible"}})
    )
    with pytest.raises(TaskFormatError, match=r"step\.json: field 'config\[0\]\.type'"):
        load_task_dir(tmp_path / "sub")
    with pytest.raises(TaskFormatError, match=r"broken\.json: not valid JSON"):
        load_task_dir(tmp_path)  # sorted: broken.json comes first
    with pytest.raises(TaskFormatError, match="no such task file"):
        load_task(tmp_path / "missing.json")
    with pytest.raises(TaskFormatError, match="not a directory"):
        load_task_dir(tmp_path / "nowhere")


def test_list_lengths_must_match() -> None:
    data = {
        "id": "x",
        "instruction": "y",
        "evaluator": {
            "func": ["exact_match", "exact_match"],
            "result": [{"type": "vm_command_line", "command": "true"}],
            "expected": [{"type": "rule", "rules": {"expected": ""}}, {"type": "rule", "rules": {"expected": ""}}],
        },
    }
    with pytest.raises(TaskFormatError, match=r"'evaluator\.result' has 1 entries; 'evaluator\.func' has 2"):
        OSWorldTask.from_dict(data)
    data["evaluator"]["result"] *= 2
    data["evaluator"]["conj"] = "xor"
    with pytest.raises(TaskFormatError, match=r"'evaluator\.conj' must be 'and' or 'or'"):
        OSWorldTask.from_dict(data)


# -- validation ----------------------------------------------------------------------------------


def _task(config: list[dict], func: Any, result: Any, expected: Any = None) -> OSWorldTask:
    evaluator: dict[str, Any] = {"func": func, "result": result}
    if expected is not None:
        evaluator["expected"] = expected
    return OSWorldTask.from_dict({"id": "bad", "instruction": "x", "config": config, "evaluator": evaluator})


def test_validate_names_unsupported_names_with_suggestions() -> None:
    task = _task(
        [
            {"type": "launch", "parameters": {"command": ["gedit"]}},
            {"type": "exectue", "parameters": {}},
            {"type": "googledrive", "parameters": {"settings_file": "x"}},
        ],
        ["exact_mach", "check_include_exclude"],
        [{"type": "vm_comand_line", "command": "ls"}, {"type": "page_info"}],
        [{"type": "rule", "rules": {"expected": "x"}}, {"type": "rule", "rules": {"include": []}}],
    )
    problems = validate(task, strict=False)
    assert len(problems) == 5
    joined = "\n".join(problems)
    assert "config[1]: unsupported setup step type 'exectue'" in joined and "did you mean 'execute'?" in joined
    assert "config[2]: unsupported setup step type 'googledrive'" in joined
    assert "evaluator.func[0]: unsupported metric 'exact_mach'" in joined and "did you mean 'exact_match'?" in joined
    assert "evaluator.result[0]: unsupported getter 'vm_comand_line'" in joined
    assert "did you mean 'vm_command_line'?" in joined
    assert "evaluator.result[1]: unsupported getter 'page_info'" in joined
    with pytest.raises(TaskFormatError, match="did you mean 'execute'"):
        validate(task)
    assert "download" in SUPPORTED_SETUP_TYPES and "cloud_file" in SUPPORTED_GETTERS  # from the asset cache


# -- evaluate() ----------------------------------------------------------------------------------


def test_infeasible_scores_only_fail(tasks: dict[str, OSWorldTask]) -> None:
    task = tasks[INFEASIBLE_TASK]

    def never(spec: dict) -> Any:
        raise AssertionError("infeasible tasks fetch nothing")

    assert evaluate(task, last_action="FAIL", get=never)[0] == 1.0
    assert evaluate(task, last_action={"action_type": "FAIL"}, get=never)[0] == 1.0
    score, details = evaluate(task, last_action="DONE", get=never)
    assert score == 0.0 and "not FAIL" in details[0]["error"]


def test_fail_on_feasible_task_scores_zero(tasks: dict[str, OSWorldTask]) -> None:
    score, details = evaluate(tasks[TERMINAL_TASK], last_action="FAIL", get=dict_getter({"vm_terminal_output": "user"}))
    assert score == 0.0 and "FAIL" in details[0]["error"]


def test_file_content_task(tasks: dict[str, OSWorldTask], tmp_path: Path) -> None:
    task = tasks[FILE_TASK]
    note = tmp_path / "home/user/Desktop/note.txt"
    score, details = evaluate(task, last_action="DONE", get=files_getter(tmp_path))
    assert score == 0.0 and "returned None" in details[0]["error"]  # file missing: getter gives None
    note.parent.mkdir(parents=True)
    note.write_text("hello\n")
    assert evaluate(task, last_action="DONE", get=files_getter(tmp_path)) == (
        1.0,
        [{"func": "check_list", "score": 1.0, "error": None}],
    )
    note.write_text("hello\nerror\n")
    assert evaluate(task, last_action="DONE", get=files_getter(tmp_path))[0] == 0.0


def test_missing_file_raised_by_getter_scores_zero(tasks: dict[str, OSWorldTask]) -> None:
    def get(spec: dict) -> Any:
        raise FileNotFoundError(spec["path"])

    score, details = evaluate(tasks[FILE_TASK], last_action="DONE", get=get)
    assert score == 0.0 and "not found" in details[0]["error"]


def test_list_directory_task(tasks: dict[str, OSWorldTask]) -> None:
    tree = {
        "name": "Documents",
        "type": "directory",
        "children": [{"name": "reports", "type": "directory", "children": [{"name": "q1.txt", "type": "file"}]}],
    }
    assert evaluate(tasks[DIR_TASK], last_action="DONE", get=dict_getter({"list_directory": tree}))[0] == 1.0
    tree["children"].append({"name": "draft.txt", "type": "file"})
    assert evaluate(tasks[DIR_TASK], last_action="DONE", get=dict_getter({"list_directory": tree}))[0] == 0.0


def test_terminal_output_task(tasks: dict[str, OSWorldTask]) -> None:
    task = tasks[TERMINAL_TASK]
    assert evaluate(task, last_action="DONE", get=dict_getter({"vm_terminal_output": "$ whoami\nuser\n"}))[0] == 1.0
    assert (
        evaluate(task, last_action="DONE", get=dict_getter({"vm_terminal_output": "whoamii: command not found user"}))[
            0
        ]
        == 0.0
    )
    score, details = evaluate(task, last_action="DONE", get=dict_getter({"vm_terminal_output": None}))
    assert score == 0.0 and details[0]["error"] == "result getter 'vm_terminal_output' returned None"


def test_and_conjunction_short_circuits(tasks: dict[str, OSWorldTask], tmp_path: Path) -> None:
    task = tasks[AND_TASK]
    settings = tmp_path / "settings.json"
    calls: list[str] = []

    def get(spec: dict) -> Any:
        calls.append(spec["type"])
        return str(settings) if spec["type"] == "vm_file" else "Python 3.11.4\n"

    settings.write_text(json.dumps({"editor": {"fontSize": 14}}))
    score, details = evaluate(task, last_action="DONE", get=get)
    assert score == 1.0 and [d["score"] for d in details] == [1.0, 1.0]
    calls.clear()
    settings.write_text(json.dumps({"editor": {"fontSize": 12}}))
    score, details = evaluate(task, last_action="DONE", get=get)
    assert score == 0.0 and len(details) == 1 and calls == ["vm_file"]  # OSWorld stops at the first 0


def test_and_conjunction_averages_partial_scores() -> None:
    task = _task(
        [],
        ["fuzzy_match", "exact_match"],
        [{"type": "vm_command_line", "command": "a"}, {"type": "vm_command_line", "command": "b"}],
        [{"type": "rule", "rules": {"expected": "help"}}, {"type": "rule", "rules": {"expected": "hello"}}],
    )
    score, details = evaluate(task, last_action="DONE", get=lambda spec: "hello")
    assert details[1]["score"] == 1.0
    assert score == pytest.approx((general.fuzzy_match("hello", {"expected": "help"}) + 1.0) / 2)


def test_or_conjunction(tasks: dict[str, OSWorldTask]) -> None:
    task = tasks[OR_TASK]
    score, details = evaluate(task, last_action="DONE", get=dict_getter({"vm_command_line": "Yes"}))
    assert score == 1.0 and [d["score"] for d in details] == [0.0, 1.0]
    score, details = evaluate(task, last_action="DONE", get=dict_getter({"vm_command_line": "yes"}))
    assert score == 1.0 and len(details) == 1  # stops at the first 1
    assert evaluate(task, last_action="DONE", get=dict_getter({"vm_command_line": "no"}))[0] == 0.0


def test_or_takes_max_of_partial_scores() -> None:
    task = _task(
        [],
        ["fuzzy_match", "fuzzy_match"],
        [{"type": "vm_command_line"}, {"type": "vm_command_line"}],
        [{"type": "rule", "rules": {"expected": "abcd"}}, {"type": "rule", "rules": {"expected": "abcx"}}],
    )
    task = OSWorldTask.from_dict({**task.raw, "evaluator": {**task.raw["evaluator"], "conj": "or"}})
    score, details = evaluate(task, last_action="DONE", get=lambda spec: "abc")
    assert score == max(d["score"] for d in details) == pytest.approx(6 / 7)


def test_metric_exception_scores_zero_with_error(tmp_path: Path) -> None:
    task = _task(
        [],
        "check_json",
        {"type": "vm_file", "path": "/x.json", "dest": "x.json"},
        {"type": "rule", "rules": {"expect": [{"key": ["a"], "method": "bogus", "ref": 1}]}},
    )
    good = tmp_path / "x.json"
    good.write_text('{"a": 1}')
    score, details = evaluate(task, last_action="DONE", get=lambda spec: str(good))
    assert score == 0.0 and details[0]["func"] == "check_json"
    assert "NotImplementedError" in details[0]["error"] and "bogus" in details[0]["error"]
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    score, details = evaluate(task, last_action="DONE", get=lambda spec: str(broken))
    assert score == 0.0 and "JSONDecodeError" in details[0]["error"]
    # A path the getter returned but that does not exist is a missing file: 0, not a crash.
    score, details = evaluate(task, last_action="DONE", get=lambda spec: str(tmp_path / "gone.json"))
    assert score == 0.0 and "not found" in details[0]["error"]


def test_getter_exception_scores_zero_with_error(tasks: dict[str, OSWorldTask]) -> None:
    def get(spec: dict) -> Any:
        raise ConnectionError("desktop went away")

    score, details = evaluate(tasks[TERMINAL_TASK], last_action="DONE", get=get)
    assert score == 0.0 and "ConnectionError: desktop went away" in details[0]["error"]


def test_rule_getters_never_reach_get(tasks: dict[str, OSWorldTask]) -> None:
    seen: list[dict] = []

    def get(spec: dict) -> Any:
        seen.append(spec)
        return "Yes"

    evaluate(tasks[OR_TASK], last_action="DONE", get=get)
    assert seen and all(spec["type"] == "vm_command_line" for spec in seen)


def test_csv_compare_table_task(tasks: dict[str, OSWorldTask], tmp_path: Path) -> None:
    task = tasks[TABLE_TASK]
    home = tmp_path / "home/user"
    (home / ".gold").mkdir(parents=True)
    (home / ".gold/scores_gold.csv").write_text("name,a,b,total\nann,1,2,3\nbob,2.5,1,3.5\n")
    (home / "scores.csv").write_text("name,a,b,total\nann,1,2,3.0\nbob,2.5,1,3.50001\n")
    assert evaluate(task, last_action="DONE", get=files_getter(tmp_path))[0] == 1.0
    (home / "scores.csv").write_text("name,a,b,total\nann,1,2,3\nbob,2.5,1,\n")
    assert evaluate(task, last_action="DONE", get=files_getter(tmp_path))[0] == 0.0
    (home / "scores.csv").unlink()
    score, details = evaluate(task, last_action="DONE", get=files_getter(tmp_path))
    assert score == 0.0 and "returned None" in details[0]["error"]


def test_compare_table_csv_without_pandas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_pandas(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("no pandas")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("x,y\n1,2.00001\n")
    b.write_text("x,y\n1.0,2\n")
    assert calc.compare_table(str(a), str(b)) == 1.0
    b.write_text("x,y\n1,3\n")
    assert calc.compare_table(str(a), str(b)) == 0.0


def test_compare_table_xlsx_needs_openpyxl(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    try:
        import openpyxl
    except ImportError:
        book = tmp_path / "r.xlsx"
        book.write_bytes(b"PK")
        with pytest.raises(DependencyNotInstalled, match="pip install openpyxl"):
            calc.compare_table(str(book), str(book))
        return
    for name, total in (("r.xlsx", 3), ("e.xlsx", 3.00001)):
        wb = openpyxl.Workbook()
        wb.active.append(["a", "total"])
        wb.active.append([1, total])
        wb.save(tmp_path / name)
    rules = [{"type": "sheet_name"}, {"type": "sheet_data", "sheet_idx0": "RNSheet", "sheet_idx1": "EI0"}]
    assert calc.compare_table(str(tmp_path / "r.xlsx"), str(tmp_path / "e.xlsx"), rules=rules) == 1.0


def test_metric_registry_matches_validation() -> None:
    assert set(evaluators.METRICS) >= {
        "exact_match",
        "fuzzy_match",
        "check_include_exclude",
        "is_in_list",
        "literal_match",
        "check_json",
        "compare_text_file",
        "compare_table",
        "infeasible",
        "check_list",
    }
    for name, func in evaluators.METRICS.items():
        assert func.__doc__ and ">>>" in func.__doc__, name
