"""The TIR action format and the math verifier (no sandbox needed)."""

from __future__ import annotations

import threading

import pytest

from agentrl.core import Action, ParseError, Task
from agentrl.envs.tirmath.actions import TIRActionSet, extract_last_boxed
from agentrl.envs.tirmath.verify import MathVerifier, answers_equal, exact_rational

ACTIONS = TIRActionSet()


@pytest.mark.parametrize(
    ("text", "kind", "content"),
    [
        ("```python\nx = 2\nprint(x)\n```", "code", "x = 2\nprint(x)"),
        ("First\n```py\na=1\n```\nthen\n```Python\nprint(a)\n```", "code", "a=1\nprint(a)"),
        ("  ```python  \nprint(1)\n  ```  ", "code", "print(1)"),
        ("Answer: \\boxed{\\frac{1}{2}}", "answer", "\\frac{1}{2}"),
        ("```python\nprint(1)\n```\nso \\boxed{1}", "answer", "1"),
        ("\\boxed{a} then \\boxed{ {b} }", "answer", "{b}"),
        ("\\fbox{7}", "answer", "7"),
    ],
)
def test_parse_actions(text, kind, content):
    action = ACTIONS.parse(text)
    assert isinstance(action, Action) and (action.kind, action.content) == (kind, content)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "no ```python code block"),
        ("```python\nprint(1)", "not closed"),
        ("\\boxed{7", "\\boxed{ is not closed"),
        ("```\nprint(1)\n```", "no ```python code block"),
        ("\ud800\udfff garbage \x00\x01", "no ```python"),
    ],
)
def test_malformed_turns_are_parse_errors(text, fragment):
    result = ACTIONS.parse(text)
    assert isinstance(result, ParseError) and fragment in result.message and result.void


def test_every_malformed_example_is_a_parse_error():
    assert all(isinstance(ACTIONS.parse(t), ParseError) for t in ACTIONS.malformed_examples())


def test_parse_is_linear_on_huge_and_nested_input():
    assert extract_last_boxed("\\boxed{" * 20000) is None
    assert isinstance(ACTIONS.parse("```python\n" * 5000), ParseError)


def test_tool_schemas_are_openai_functions():
    names = [schema["function"]["name"] for schema in ACTIONS.tool_schemas()]
    assert names == ["run_python", "final_answer"]
    assert ACTIONS.parse(ACTIONS.format_final("3")).content == "3"
    assert ACTIONS.parse(ACTIONS.format_code("print(3)")).content == "print(3)"


@pytest.mark.parametrize(
    ("prediction", "gold", "equal"),
    [
        ("42", "42", True),
        ("42.0", "42", True),
        ("\\frac{84}{2}", "42", True),
        ("-\\frac{3}{7}", "-\\frac{3}{7}", True),
        ("-3/7", "-\\frac{3}{7}", True),
        ("1,000,000", "1000000", True),
        ("$42$", "42", True),
        ("43", "42", False),
        ("\\sqrt{8}", "2\\sqrt{2}", True),
        ("(x+1)^2", "x^2+2x+1", True),
        ("x^2+2x", "x^2+2x+1", False),
        ("banana", "42", False),
        ("", "42", False),
    ],
)
def test_answers_equal(prediction, gold, equal):
    assert answers_equal(prediction, gold) is equal
    assert MathVerifier()(Task("t", "", gold), prediction, {}).value == float(equal)


def test_exact_rational_rejects_what_it_cannot_read():
    assert exact_rational("1/0") is None
    assert exact_rational("9" * 1000) is None


def test_verifier_works_off_the_main_thread_and_bounds_hostile_answers():
    verifier = MathVerifier(timeout_s=3.0)
    task = Task("t", "", "\\sqrt{2}")
    results: list[float] = []
    thread = threading.Thread(target=lambda: results.append(verifier(task, "2^{1/2}", {}).value))
    thread.start()
    thread.join(60)
    assert results == [1.0]
    for hostile in ["10^{10^{10^{10}}}", "\\frac{" * 300, "\ud800", "x" * 5000, "9" * 900 + "!"]:
        score = verifier(task, hostile, {})
        assert score.value == 0.0
    # still usable after a timeout or a crash of the helper process
    assert verifier(task, "\\sqrt{2}", {}).value == 1.0
    assert verifier(Task("t", "", "x^2"), "x*x", {}).value == 1.0


# ------------------------------------------------------------------------------------------------
# the grader process never imports the caller: scoring from stdin, -c, unguarded scripts, embedded

SCORING_PROGRAM = """
import json, sys
sys.path[:0] = json.loads({path!r})
print("program body ran", flush=True)
from agentrl.core.task import Task
from agentrl.envs.tirmath.verify import MathVerifier
verifier = MathVerifier(timeout_s=60)
task = Task("t", "q", "(x+1)^2")
print("scores", verifier(task, "x^2+2x+1", {{}}).value, verifier(task, "x^2+1", {{}}).value, flush=True)
"""

EMBED_C = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
int main(int argc, char **argv) {
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    /* the host program is sys.executable, as in a real embedding application */
    PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, argv[0]);
    if (PyStatus_Exception(status)) return 3;
    status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) return 4;
    FILE *file = fopen(argv[1], "r");
    if (file == NULL) return 5;
    int failed = PyRun_SimpleFile(file, argv[1]);
    if (Py_FinalizeEx() < 0) return 6;
    return failed ? 1 : 0;
}
"""


def _embedded_python(tmp_path) -> str:
    """A tiny C program embedding this Python (skips without a compiler or a shared libpython)."""
    import shutil
    import subprocess
    import sysconfig

    compiler = shutil.which("cc") or shutil.which("gcc")
    include, libdir = sysconfig.get_paths()["include"], sysconfig.get_config_var("LIBDIR")
    version = sysconfig.get_config_var("LDVERSION") or sysconfig.get_python_version()
    if not compiler or not libdir or not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        pytest.skip("needs a C compiler and a shared libpython")
    source, binary = tmp_path / "embed.c", tmp_path / "embedded-host"
    source.write_text(EMBED_C)
    build = subprocess.run(
        [compiler, str(source), "-o", str(binary), f"-I{include}", f"-L{libdir}", f"-lpython{version}",
         f"-Wl,-rpath,{libdir}", "-lm", "-ldl"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if build.returncode != 0:
        pytest.skip(f"cannot build an embedded interpreter: {build.stderr[-500:]}")
    return str(binary)


@pytest.mark.parametrize("launch", ["stdin", "dash_c", "unguarded_script", "embedded"])
def test_scoring_works_however_the_caller_was_started(launch: str, tmp_path) -> None:
    import json
    import os
    import subprocess
    import sys

    program = SCORING_PROGRAM.format(path=json.dumps(sys.path))
    script = tmp_path / "score_without_main_guard.py"
    script.write_text(program)
    env = {k: v for k, v in os.environ.items() if k != "AGENTRL_GRADER_PYTHON"}
    commands = {
        "stdin": ([sys.executable, "-"], program),
        "dash_c": ([sys.executable, "-c", program], None),
        "unguarded_script": ([sys.executable, str(script)], None),
    }
    if launch == "embedded":
        command, stdin = [_embedded_python(tmp_path), str(script)], None
    else:
        command, stdin = commands[launch]
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ConnectionResetError" not in done.stderr and "Error" not in done.stdout, done.stderr[-3000:]
    assert done.stdout.count("program body ran") == 1, done.stdout  # the grader never re-ran the caller
    assert "scores 1.0 0.0" in done.stdout, (done.stdout, done.stderr[-3000:])


def test_check_domain_passes_for_a_program_read_from_stdin(tmp_path) -> None:
    import json
    import subprocess
    import sys

    program = (
        f"import json, sys\nsys.path[:0] = json.loads({json.dumps(sys.path)!r})\n"
        "from agentrl.testing import check_domain\n"
        "check_domain('AgentRL/TIRMath-v0')\n"
        "print('check_domain ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-"], input=program, capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert done.returncode == 0 and "check_domain ok" in done.stdout, done.stderr[-3000:]


def test_python_executable_is_python_and_can_be_overridden(monkeypatch) -> None:
    import sys

    from agentrl.envs.tirmath import grader

    assert grader.python_executable() == sys.executable
    monkeypatch.setattr(sys, "executable", "/opt/host-app/bin/embedding-host")  # an embedded interpreter
    assert "python" in grader.python_executable().rsplit("/", 1)[-1]
    monkeypatch.setenv(grader.PYTHON_ENV_VAR, "/custom/python3")
    assert grader.python_executable() == "/custom/python3"
