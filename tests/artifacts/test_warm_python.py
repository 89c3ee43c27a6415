"""``tests/warm_python.py`` runs a command as a new interpreter would: the same argv, path, folder, environment,
streams, exit status and ending; only the preloaded modules are imported already, under the command's own settings
for what is read at import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import warm_python

#: what the server imports in these tests: a light module that Python's start does not import (the real list takes
#: about 8 CPU-seconds a server, and these tests start three)
LIGHT = ("fractions",)


@pytest.fixture(autouse=True)
def light_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A light server of the test's own; the worker's server, set aside meanwhile, serves its next command again
    (closing it cost a new one about 8 CPU-seconds each time)."""
    monkeypatch.setattr(warm_python, "PRELOAD", LIGHT)
    monkeypatch.setattr(warm_python, "_server", None)
    yield
    warm_python.close()


PROBE = """
import atexit, json, os, sys, threading, time
def last_words():
    open(os.environ["ATEXIT_FILE"], "w").write("ran")
atexit.register(last_words)
def late():
    time.sleep(0.3)
    print("thread joined", flush=True)
threading.Thread(target=late).start()  # not a daemon: the interpreter waits for it before atexit
print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "path0": sys.path[0], "name": __name__,
                  "mine": os.environ.get("MINE"), "on_path": os.environ["EXTRA"] in sys.path,
                  "warm": "fractions" in sys.modules, "session": os.getsid(0) == os.getpid()}))
print("to stderr", file=sys.stderr)
sys.exit(int(os.environ.get("EXIT", "0")))
"""


def probe_both(tmp_path: Path, args: list[str], **env: str) -> tuple[subprocess.CompletedProcess[str], ...]:
    (tmp_path / "extra").mkdir(exist_ok=True)
    base = {**os.environ, "MINE": "x", "EXTRA": str(tmp_path / "extra"), "PYTHONPATH": str(tmp_path / "extra"), **env}
    runs = []
    for cold in ("1", ""):
        atexit_file = tmp_path / f"atexit-{cold or 'warm'}"
        environment = {**base, "ATEXIT_FILE": str(atexit_file)}
        os.environ["AGENTRL_COLD_PYTHON"] = cold
        try:
            runs.append(warm_python.run(args, cwd=tmp_path, env=environment, timeout=120))
        finally:
            os.environ.pop("AGENTRL_COLD_PYTHON")
        assert atexit_file.read_text() == "ran", runs[-1].stderr
    return tuple(runs)


def facts(run: subprocess.CompletedProcess[str]) -> dict:
    lines = run.stdout.splitlines()
    assert lines[-1] == "thread joined" and run.stderr.endswith("to stderr\n"), (run.stdout, run.stderr)
    return json.loads(lines[0])


@pytest.mark.parametrize("form", ["script", "module", "code", "console script"])
def test_a_warm_run_sees_what_a_new_interpreter_sees(tmp_path: Path, form: str) -> None:
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "probe_module.py").write_text(PROBE)
    (tmp_path / "probe_script.py").write_text(PROBE)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "probe").write_text(f"#!{sys.executable}\n{PROBE}")  # as pip writes agentrl's
    (tmp_path / "bin" / "probe").chmod(0o755)
    args = {"script": [sys.executable, str(tmp_path / "probe_script.py"), "a", "b"],
            "module": [sys.executable, "-m", "probe_module", "a", "b"],
            "code": [sys.executable, "-c", PROBE, "a", "b"],
            "console script": [str(tmp_path / "bin" / "probe"), "a", "b"]}[form]  # fmt: skip
    cold, warm = probe_both(tmp_path, args, EXIT="3")
    assert cold.returncode == warm.returncode == 3
    cold_facts, warm_facts = facts(cold), facts(warm)
    assert not cold_facts.pop("warm") and warm_facts.pop("warm")  # the one difference, and it can be seen
    assert not cold_facts.pop("session") and warm_facts.pop("session")  # a session of its own, for the timeout
    assert warm_facts == cold_facts, (warm_facts, cold_facts)


def test_a_command_that_sets_an_import_time_variable_gets_a_server_with_its_setting(tmp_path: Path) -> None:
    code = "import sys; print(sys.flags.hash_randomization)"  # read when the interpreter starts
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for seed, hashing in (("0", "0"), ("123", "1"), ("random", "1")):  # PYTHONHASHSEED=0 turns hashing off
        env["PYTHONHASHSEED"] = seed
        done = warm_python.run([sys.executable, "-c", code], cwd=tmp_path, env=env, timeout=120)
        assert done.stdout.split()[-1] == hashing, (seed, done.stdout, done.stderr)
        assert warm_python._server is not None and warm_python._server.env["PYTHONHASHSEED"] == seed


def test_a_command_past_its_timeout_is_killed_with_what_it_started(tmp_path: Path) -> None:
    code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as expired:
        warm_python.run([sys.executable, "-c", code], cwd=tmp_path, env=env, timeout=3)
    assert time.monotonic() - started < 30
    grandchild = int(str(expired.value.output).split()[0])
    for _ in range(50):  # killed with its session; the server reaped the command, init reaps the grandchild
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the command's child {grandchild} outlived the timeout")
    # and the server still serves
    assert warm_python.run([sys.executable, "-c", "print('next')"], cwd=tmp_path, env=env).stdout == "next\n"


WAYS_OUT = ["import sys; sys.exit('bye')", "raise KeyError('lost')", "import sys; sys.exit()", "import os; os._exit(7)"]


@pytest.mark.parametrize("code", WAYS_OUT)
def test_every_way_out_gives_the_status_and_words_of_a_new_interpreter(tmp_path: Path, code: str) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    runs = []
    for cold in ("1", ""):
        os.environ["AGENTRL_COLD_PYTHON"] = cold
        try:
            runs.append(warm_python.run([sys.executable, "-c", code], cwd=tmp_path, env=env, timeout=60))
        finally:
            os.environ.pop("AGENTRL_COLD_PYTHON")
    cold_run, warm_run = runs
    assert warm_run.returncode == cold_run.returncode
    assert warm_run.stderr.splitlines()[-1:] == cold_run.stderr.splitlines()[-1:], (warm_run.stderr, cold_run.stderr)
