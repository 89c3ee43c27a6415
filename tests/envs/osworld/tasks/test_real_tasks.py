"""OSWorld's real task-file quirks: file-by-file loading, the pool the env keeps, ``agentrl osworld coverage``.

The fixtures (tests/envs/osworld/fixtures/real/) are our own tasks in OSWorld's real format and layout
(``test_all.json`` beside ``examples/<domain>/<id>.json``), one per quirk seen in OSWorld's files:
``"func": ""``, a list-valued ``source``, a list ``func`` with ``conj``, an infeasible task without
``config``, a ``download`` step (served from the asset cache, so supported), an unknown getter, an
id reused in another domain, an ``evaluator`` that is a string, a cut-short file and a listed id
without a file. Loading and validation only: no
desktop, except the last test (marked ``desktop``).
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

from agentrl.cli import main
from agentrl.core.errors import TaskFormatError
from agentrl.envs.osworld.tasks.coverage import coverage
from agentrl.envs.osworld.tasks.format import OSWorldTask, load_task
from agentrl.envs.osworld.tasks.pool import EmptyTaskPool, pool_of, read_tasks, required_apps

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "real"
EXAMPLES = ROOT / "examples"


def uid(n: int) -> str:
    return f"7e1f0c2a-{n:04d}-4b6e-9c1d-{n:012d}"


OK, NO_EVAL, INFEASIBLE, CONJ_OR, DOWNLOAD = uid(1), uid(2), uid(3), uid(4), uid(5)
LIST_SOURCE, CLOUD, CHROME_TABS, CHROME_INFEASIBLE = uid(6), uid(7), uid(8), uid(9)
EVAL_STRING, CUT_SHORT, NO_FILE = uid(11), uid(12), uid(13)
SUPPORTED = [OK, INFEASIBLE, CONJ_OR, DOWNLOAD, CHROME_INFEASIBLE]
DESKTOP_APPS = ["xterm", "mousepad", "thunar", "galculator", "chromium"]


def reasons(pool_or_report: object) -> dict[str, list[str]]:
    """Task id -> the labels of its blockers."""
    skipped = getattr(pool_or_report, "skipped", None)
    if skipped is not None:
        return {s.id: [r.label for r in s.reasons] for s in skipped}
    return {row.id: [b.label for b in row.blockers] for row in pool_or_report.rows}  # type: ignore[attr-defined]


# -- the format's quirks parse ----------------------------------------------------------------------------------------


def test_real_quirks_parse() -> None:
    no_eval = load_task(EXAMPLES / "os" / f"{NO_EVAL}.json")
    assert no_eval.evaluator.funcs == ()
    listed = load_task(EXAMPLES / "vs_code" / f"{LIST_SOURCE}.json")
    assert listed.source == "https://example.org/question/1 https://example.org/question/2"
    either = load_task(EXAMPLES / "os" / f"{CONJ_OR}.json")
    assert (either.evaluator.funcs, either.evaluator.conj, either.evaluator.multi) == (
        ("check_include_exclude", "exact_match"), "or", True)
    assert load_task(EXAMPLES / "os" / f"{INFEASIBLE}.json").config == ()


def test_required_apps_follow_steps_and_related_apps() -> None:
    calc = load_task(EXAMPLES / "libreoffice_calc" / f"{CLOUD}.json")
    assert [app for app, _ in required_apps(calc)] == ["localc", "localc"]
    chrome = load_task(EXAMPLES / "chrome" / f"{CHROME_TABS}.json")
    assert [app for app, _ in required_apps(chrome)] == ["chromium", "chromium"]  # no socat: Chromium is on 9222
    thunderbird = load_task(EXAMPLES / "thunderbird" / f"{CHROME_TABS}.json")
    assert ("thunderbird", "config[0] launch") in required_apps(thunderbird)  # /usr/bin/thunderbird


# -- loading: a folder, a task list, a file ---------------------------------------------------------------------------


def test_folder_keeps_good_files_and_reports_bad_ones() -> None:
    pool = read_tasks(EXAMPLES)
    loaded = {t.id for t in pool.tasks}
    assert {OK, NO_EVAL, INFEASIBLE, CONJ_OR, DOWNLOAD, LIST_SOURCE, CLOUD, CHROME_TABS} <= loaded
    assert f"thunderbird/{CHROME_TABS}" in loaded  # an id reused in another domain is kept, qualified
    skipped = reasons(pool)
    assert skipped == {EVAL_STRING: ["format: field 'evaluator' must be an object"],
                       CUT_SHORT: [skipped[CUT_SHORT][0]]}
    assert skipped[CUT_SHORT][0].startswith("format: not valid JSON (line 4")
    assert pool.domains[OK] == "os" and pool.domain(pool.tasks[0]) == "chrome"

    selected = pool.select(installed=DESKTOP_APPS)
    assert sorted(t.id for t in selected.tasks) == sorted(SUPPORTED)
    why = reasons(selected)
    assert why[NO_EVAL] == ["evaluator: func is empty"]
    assert DOWNLOAD not in why  # its file comes from the asset cache (tests/envs/osworld/tasks/test_assets.py)
    assert why[LIST_SOURCE] == ["app 'code' not installed"]
    assert why[CLOUD] == ["app 'localc' not installed"]
    assert why[f"thunderbird/{CHROME_TABS}"] == ["app 'thunderbird' not installed"]
    code = next(s for s in selected.skipped if s.id == LIST_SOURCE).reasons[0].message
    assert "not packaged in Debian" in code  # VS Code: say so
    assert "config[2]: unsupported setup step type 'login'" in " ".join(
        r.message for s in selected.skipped if s.id == CHROME_TABS for r in s.reasons)


def test_unknown_apps_are_not_checked() -> None:
    selected = read_tasks(EXAMPLES).select(installed=None)
    assert LIST_SOURCE in {t.id for t in selected.tasks}  # only its app stood in the way


def test_task_list_loads_in_order_and_reports_missing_files() -> None:
    for source, split in ((ROOT, None), (ROOT, "test_all"), (ROOT / "test_all.json", None)):
        pool = read_tasks(source, split=split)
        assert pool.split == "test_all"
        assert [t.id for t in pool.tasks][:5] == [OK, NO_EVAL, INFEASIBLE, CONJ_OR, DOWNLOAD]
        assert pool.domains[f"thunderbird/{CHROME_TABS}"] == "thunderbird"
        assert reasons(pool)[NO_FILE] == ["format: no task file"]
        assert {s.id for s in pool.skipped} == {EVAL_STRING, CUT_SHORT, NO_FILE}
    assert [t.id for t in read_tasks(ROOT, split="test_small").tasks] == [OK, INFEASIBLE]
    with pytest.raises(TaskFormatError, match="task lists there: test_all, test_small"):
        read_tasks(ROOT, split="test_none")


def test_single_file_and_bad_paths(tmp_path: Path) -> None:
    assert [t.id for t in read_tasks(EXAMPLES / "os" / f"{OK}.json").tasks] == [OK]
    bad = read_tasks(EXAMPLES / "vlc" / f"{EVAL_STRING}.json")
    assert (bad.tasks, [s.id for s in bad.skipped]) == ([], [EVAL_STRING])
    with pytest.raises(TaskFormatError, match="no such file or folder"):
        read_tasks(tmp_path / "nowhere")
    (tmp_path / "list.json").write_text(json.dumps({"os": "not a list"}))
    single = read_tasks(tmp_path / "list.json")  # neither a list nor a task: reported, not fatal
    assert single.skipped[0].reasons[0].kind == "format"


def test_duplicate_id_in_one_domain_keeps_the_file_named_by_it(tmp_path: Path) -> None:
    folder = tmp_path / "os"
    shutil.copytree(EXAMPLES / "os", folder)
    shutil.copy(folder / f"{OK}.json", folder / f"{OK}-win.json")  # sorts first; OSWorld has such a copy
    pool = read_tasks(folder)
    assert next(t for t in pool.tasks if t.id == OK).file.endswith(f"{OK}.json")
    assert [(s.file.endswith("-win.json"), s.reasons[0].label) for s in pool.skipped] == [
        (True, "format: duplicate task id")]


def test_tasks_of_osworlds_windows_vm_are_left_out(tmp_path: Path) -> None:
    """OSWorld's examples/Windows: Windows programs and paths; its no-op would fail its setup here, not score."""
    ok = {"id": "linux", "instruction": "x", "config": [{"type": "launch", "parameters": {"command": ["xterm"]}}],
          "evaluator": {"func": "exact_match", "result": {"type": "vm_file", "path": "/home/user/a.txt", "dest": "a"},
                        "expected": {"type": "rule", "rules": {"expected": "x"}}}}
    program = {**ok, "id": "program", "config": [{"type": "launch", "parameters": {
        "command": ["C:\\Program Files\\Google\\Chrome\\Application\\chrome.exe", "--remote-debugging-port=1337"]}}]}
    bare = {**ok, "id": "bare", "config": [{"type": "launch", "parameters": {"command": ["ncat.exe", "-k", "-l"]}}]}
    path = {**ok, "id": "path", "evaluator": {**ok["evaluator"], "result": {
        "type": "vm_file", "path": "C:\\Users\\chenj\\Desktop\\a.docx", "dest": "a.docx"}}}
    for task in (ok, program, bare, path):
        (tmp_path / f"{task['id']}.json").write_text(json.dumps(task))
    pool = read_tasks(tmp_path).select(installed=DESKTOP_APPS)
    assert [t.id for t in pool.tasks] == ["linux"]
    assert {s.id: s.reasons[0].label for s in pool.skipped} == {
        "bare": "platform 'windows'", "path": "platform 'windows'", "program": "platform 'windows'"}
    assert "a task of OSWorld's Windows VM" in next(s for s in pool.skipped if s.id == "path").reasons[0].message


# -- the empty pool's error -------------------------------------------------------------------------------------------


def test_empty_pool_names_the_reasons_and_the_command(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES / "os" / f"{NO_EVAL}.json", tmp_path / f"{NO_EVAL}.json")
    shutil.copy(EXAMPLES / "chrome" / f"{CHROME_TABS}.json", tmp_path / f"{CHROME_TABS}.json")
    shutil.copy(EXAMPLES / "vlc" / f"{EVAL_STRING}.json", tmp_path / "template.json")
    pool = read_tasks(tmp_path).select(installed=None)
    with pytest.raises(EmptyTaskPool) as caught:
        pool.require_tasks()
    message = str(caught.value)
    assert "none of its 3 OSWorld tasks can run on this desktop" in message
    for part in ("evaluator: func is empty (1)", "setup step 'login' (1)",
                 "format: field 'evaluator' must be an object (1)", f"agentrl osworld coverage {tmp_path}"):
        assert part in message
    (tmp_path / "empty").mkdir()
    with pytest.raises(EmptyTaskPool, match="no OSWorld task files found"):
        read_tasks(tmp_path / "empty").require_tasks()


def test_env_refuses_an_empty_pool_before_starting_a_desktop(tmp_path: Path) -> None:
    from agentrl.envs.osworld.env import OSWorldEnv

    shutil.copy(EXAMPLES / "chrome" / f"{CHROME_TABS}.json", tmp_path / "task.json")
    # provider="remote" without a URL would fail at connect: the pool is refused first
    with pytest.raises(EmptyTaskPool, match=r"setup step 'login' \(1\).*agentrl osworld coverage"):
        OSWorldEnv(tasks=str(tmp_path), provider="remote")
    task = OSWorldTask.from_dict(json.loads((EXAMPLES / "os" / f"{NO_EVAL}.json").read_text()))
    with pytest.raises(EmptyTaskPool, match="evaluator: func is empty"):
        OSWorldEnv(tasks=[task], provider="remote")
    assert pool_of([task]).domain(task) == "os"  # no file: the snapshot


# -- agentrl osworld coverage -----------------------------------------------------------------------------------------


def test_coverage_rows_totals_and_blockers() -> None:
    report = coverage(ROOT, installed=DESKTOP_APPS)
    assert report.split == "test_all" and len(report.rows) == 13
    assert report.domains() == {"os": (4, 5), "vs_code": (0, 1), "libreoffice_calc": (0, 1), "chrome": (1, 2),
                                "thunderbird": (0, 1), "vlc": (0, 3)}
    assert report.totals() == (5, 13) and report.totals(exclude=["vs_code"]) == (5, 12)
    everything = coverage(ROOT, installed=[*DESKTOP_APPS, "code", "localc", "socat", "thunderbird"])
    assert everything.domains()["vs_code"] == (1, 1)


def test_coverage_cli_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["osworld", "coverage", str(ROOT), "--apps", ",".join(DESKTOP_APPS)]) == 0
    out = capsys.readouterr().out
    assert "task list test_all" in out and "apps on this desktop: chromium, galculator" in out
    line = next(line for line in out.splitlines() if line.startswith(LIST_SOURCE))
    assert line.split()[1:4] == ["vs_code", "no", "app"]
    assert next(line for line in out.splitlines() if line.startswith(OK)).split()[1:] == ["os", "yes"]
    assert "overall                   5     13    38%" in out
    assert "top blockers" in out
    assert main(["osworld", "coverage", str(ROOT), "--summary", "--apps", "all"]) == 0
    summary = capsys.readouterr().out
    assert OK not in summary and "vs_code                   1      1   100%" in summary


def test_coverage_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["osworld", "coverage", str(EXAMPLES / "os"), "--json", "--apps", "xterm"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["split"] is None and data["installed_apps"] == ["xterm"]
    assert data["total"] == {"supported": 4, "total": 5} and data["domains"] == {"os": {"supported": 4, "total": 5}}
    by_id = {row["id"]: row for row in data["tasks"]}
    assert by_id[DOWNLOAD]["supported"] is True and by_id[DOWNLOAD]["assets"]["urls"] == 1
    assert by_id[OK]["supported"] is True and by_id[OK]["reasons"] == []
    assert {"reason": "evaluator: func is empty", "tasks": 1} in data["top_blockers"]


def test_coverage_cli_bad_path(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["osworld", "coverage", str(tmp_path / "nowhere")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


# -- the env on a desktop: the pool, skipped_tasks, one warning -------------------------------------------------------


@pytest.mark.timeout(120)
def test_env_keeps_supported_tasks_and_warns_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("Xvfb") is None or shutil.which("xterm") is None:
        pytest.skip("needs Xvfb and xterm (apt-get install xvfb xterm)")
    pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
    from agentrl.core.errors import UnknownTask
    from agentrl.envs.osworld.env import OSWorldEnv
    from agentrl.envs.osworld.runtime.apps import installed_apps
    from agentrl.envs.osworld.tasks.assets import MissingAsset

    monkeypatch.setenv("AGENTRL_CACHE", str(tmp_path))  # an empty asset cache

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = OSWorldEnv(tasks=str(ROOT))
    try:
        mine = [w for w in caught if "OSWorld tasks left out" in str(w.message)]
        assert len(mine) == 1 and "agentrl osworld coverage" in str(mine[0].message)
        here = installed_apps()  # make desktop-full adds LibreOffice and Thunderbird, whose fixture tasks then run
        by_app = {CLOUD: "localc", f"thunderbird/{CHROME_TABS}": "thunderbird"}
        runnable = set(SUPPORTED) | {task for task, app in by_app.items() if app in here}
        assert set(env.task_ids()) <= runnable and OK in env.task_ids()
        left_out = {NO_EVAL, EVAL_STRING, NO_FILE} | {task for task, app in by_app.items() if app not in here}
        assert {s.id for s in env.skipped_tasks} >= left_out
        assert "over the" in env.dataset_card().metric
        with pytest.raises(UnknownTask, match=r"left out of the pool: .*evaluator.func: empty"):
            env.reset(options={"task_id": NO_EVAL})
        with pytest.raises(MissingAsset, match=r"https://example.org/files/run.sh .*agentrl osworld fetch-assets"):
            env.reset(options={"task_id": DOWNLOAD})  # in the pool, but its file was never fetched
    finally:
        env.close()
