"""Tests for the procedural TIR math problems and the JSONL math dataset loaders."""

from __future__ import annotations

import contextlib
import doctest
import io
import json
import math
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from agentrl.core.errors import TaskFormatError, UnknownTask
from agentrl.core.task import Task
from agentrl.envs.tirmath import datasets
from agentrl.envs.tirmath import tasks as math_tasks
from agentrl.envs.tirmath.datasets import JsonlMathSource, extract_boxed, gsm8k_answer
from agentrl.envs.tirmath.tasks import FAMILIES, ProceduralMathSource, generate_problem
from tests.paths import FIXTURES as FIXTURES_DIR

FIXTURES = FIXTURES_DIR
DIFFICULTIES = (0, 1, 2, 3, 4, 5)  # 0: the easy tier
SEEDS = range(12)
ANSWER_RE = re.compile(r"^-?(\d+|\\frac\{\d+\}\{\d+\})$")
CODE_RE = re.compile(r"\A(?P<intro>.*?)\n```python\n(?P<code>.*)\n```\Z", re.DOTALL)


def oracle_code(task: Task) -> str:
    match = CODE_RE.match(task.oracle_actions[0])
    assert match, task.oracle_actions[0]
    return match["code"]


def run_in_process(code: str) -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(code, "<oracle>", "exec"), {"__name__": "__main__"})
    return buffer.getvalue()


# ------------------------------------------------------------------------------------------------
# procedural problems


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_oracle_code_prints_the_gold_answer(family: str, difficulty: int) -> None:
    for seed in SEEDS:
        task = generate_problem(family, difficulty, seed)
        assert run_in_process(oracle_code(task)) == task.answer + "\n", task.id


@pytest.mark.parametrize("family", FAMILIES)
def test_oracle_code_runs_in_a_fresh_interpreter(family: str) -> None:
    task = generate_problem(family, 5, 123)
    result = subprocess.run(
        [sys.executable, "-c", oracle_code(task)], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout == task.answer + "\n"


@pytest.mark.parametrize("family", FAMILIES)
def test_task_shape(family: str) -> None:
    for difficulty in DIFFICULTIES:
        for seed in SEEDS:
            task = generate_problem(family, difficulty, seed)
            assert task.id == f"tirmath/{family}/d{difficulty}/{seed}"
            assert (task.family, task.difficulty) == (family, difficulty)
            assert dict(task.metadata) == {
                "source": "tirmath",
                "family": family,
                "difficulty": difficulty,
                "seed": seed,
            }
            if difficulty:
                assert task.prompt.endswith("Give the final answer as \\boxed{...}.")
            else:  # the easy tier: a worked example of the format, then the question
                assert task.prompt.startswith(math_tasks.EASY_FORMAT + "\n\nQuestion: ")
                assert task.prompt.endswith("\nAnswer:")
            # exact: an integer or a reduced LaTeX fraction, short enough for math-verify
            assert ANSWER_RE.match(task.answer), task.answer
            assert len(task.answer) <= 60, (task.id, task.answer)
            fraction = re.search(r"\\frac\{(\d+)\}\{(\d+)\}", task.answer)
            if fraction:
                p, q = int(fraction[1]), int(fraction[2])
                assert q > 1 and math.gcd(p, q) == 1, task.answer
            assert len(task.oracle_actions) == 2
            assert task.oracle_actions[0].startswith("I'll compute this.\n```python\n")
            assert task.oracle_actions[1] == f"The answer is \\boxed{{{task.answer}}}."
            assert "```" not in oracle_code(task)


def test_easy_tier_is_one_small_step() -> None:
    source = ProceduralMathSource(difficulty=0)
    assert source.difficulty_range == (0, 0)
    rng = np.random.default_rng(0)
    tasks = [source.sample(rng) for _ in range(200)]
    assert {t.family for t in tasks} == set(FAMILIES) and {t.difficulty for t in tasks} == {0}
    assert len({t.prompt for t in tasks}) >= 40  # procedural, not a fixed list
    for task in tasks:
        assert task.id.startswith(f"tirmath/{task.family}/d0/") and source.get(task.id) == task
        example, question = task.prompt.split("\n\nQuestion: ")
        assert example == math_tasks.EASY_FORMAT
        numbers = [int(n) for n in re.findall(r"\d+", question)]
        assert numbers and max(numbers) <= 18, task.prompt  # single digits (a dividend up to 18)
        assert 0 <= int(task.answer) <= 81, task.id  # never 100, the example's answer: copying it scores 0
    # the default range stays the code-needing tiers
    assert ProceduralMathSource().difficulty_range == (1, 3)
    with pytest.raises(UnknownTask, match="d<0-5>"):
        math_tasks.parse_task_id("tirmath/modular/d6/1")


def test_generation_is_deterministic_and_seeds_differ() -> None:
    for family in FAMILIES:
        assert generate_problem(family, 3, 5) == generate_problem(family, 3, 5)
        prompts = {generate_problem(family, 3, seed).prompt for seed in range(20)}
        assert len(prompts) >= 18, family
    # the family and difficulty take part in the seed: same seed, different streams
    assert generate_problem("series", 2, 0).prompt != generate_problem("series", 3, 0).prompt


def test_generation_is_stable_across_processes() -> None:
    code = (
        "from agentrl.envs.tirmath.tasks import generate_problem as g\n"
        "print(repr([g(f, 4, 99).answer for f in ('arithmetic', 'modular', 'combinatorics', 'linear_system', "
        "'series')]))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == repr([generate_problem(f, 4, 99).answer for f in FAMILIES])


def test_difficulty_scales_sizes() -> None:
    for family in ("arithmetic", "combinatorics", "series"):
        mean_length = {
            d: np.mean([len(generate_problem(family, d, seed).answer) for seed in range(30)]) for d in (1, 5)
        }
        assert mean_length[5] > mean_length[1], family
    unknowns = {d: generate_problem("linear_system", d, 0).prompt.count("=") for d in (1, 2, 3, 4, 5)}
    assert unknowns == {1: 2, 2: 3, 3: 4, 4: 5, 5: 5}


def test_generation_is_fast() -> None:
    generate_problem("series", 5, 0)  # warm the cached prime sieve
    for family in FAMILIES:
        durations = []
        for seed in range(15):
            start = time.perf_counter()
            generate_problem(family, 5, seed)
            durations.append(time.perf_counter() - start)
        assert np.median(durations) < 0.05, family
        assert max(durations) < 0.5, family


def test_gold_answers_are_checkable_with_math_verify() -> None:
    math_verify = pytest.importorskip("math_verify")
    for family in FAMILIES:
        for difficulty in DIFFICULTIES:
            for seed in range(3):
                task = generate_problem(family, difficulty, seed)
                gold = math_verify.parse(f"${task.answer}$")
                assert math_verify.verify(gold, math_verify.parse(task.oracle_actions[-1])), task.id
                # a near miss must not pass (big integers are compared exactly)
                if "frac" in task.answer:
                    wrong = task.answer.replace("}{", "1}{", 1)
                else:
                    wrong = str(int(task.answer) + 1)
                assert not math_verify.verify(gold, math_verify.parse(f"\\boxed{{{wrong}}}")), task.id


def test_generate_problem_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match=r"unknown family 'modulr'; choose from: arithmetic.*did you mean 'modular'"):
        generate_problem("modulr", 2, 0)
    with pytest.raises(ValueError, match="choose from"):
        generate_problem("geometry", 2, 0)
    for bad in (-1, 6, "3", True, 2.0):
        with pytest.raises(ValueError, match="difficulty must be an integer from 0 to 5"):
            generate_problem("modular", bad, 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-negative"):
        generate_problem("modular", 2, -1)
    with pytest.raises(ValueError, match="non-negative"):
        generate_problem("modular", 2, 1.5)  # type: ignore[arg-type]
    assert generate_problem("modular", np.int64(2), np.int64(7)).id == "tirmath/modular/d2/7"


def test_source_sample_and_get_round_trip() -> None:
    source = ProceduralMathSource()
    first = [source.sample(np.random.default_rng(3)) for _ in range(2)]
    assert first[0] == first[1]
    rng = np.random.default_rng(0)
    tasks = [source.sample(rng) for _ in range(200)]
    assert {t.family for t in tasks} == set(FAMILIES)
    assert {t.difficulty for t in tasks} == {1, 2, 3}
    for task in tasks[:25]:
        assert source.get(task.id) == task


def test_source_restricts_families_and_difficulty() -> None:
    source = ProceduralMathSource(families=["modular", "series"], difficulty=4)
    rng = np.random.default_rng(1)
    tasks = [source.sample(rng) for _ in range(40)]
    assert {t.family for t in tasks} == {"modular", "series"}
    assert {t.difficulty for t in tasks} == {4}
    assert ProceduralMathSource("arithmetic", (5, 5)).sample(rng).family == "arithmetic"
    assert "modular" in repr(source)
    # get() regenerates any valid id, also outside the configured families
    assert source.get("tirmath/arithmetic/d1/0") == generate_problem("arithmetic", 1, 0)


def test_source_rejects_bad_configuration() -> None:
    with pytest.raises(ValueError, match="did you mean 'series'"):
        ProceduralMathSource(families=["serie"])
    with pytest.raises(ValueError, match="must not be empty"):
        ProceduralMathSource(families=[])
    with pytest.raises(ValueError, match="from 0 to 5"):
        ProceduralMathSource(difficulty=(-1, 3))
    with pytest.raises(ValueError, match="empty"):
        ProceduralMathSource(difficulty=(4, 2))
    with pytest.raises(ValueError, match="pair"):
        ProceduralMathSource(difficulty=(1, 2, 3))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("task_id", "hint"),
    [
        ("gsm8k/3", "procedural ids look like 'tirmath/<family>/d<0-5>/<seed>'"),
        ("tirmath/modular/3/17", "procedural ids look like"),
        ("tirmath/modular/d3/-1", "procedural ids look like"),
        ("tirmath/modulr/d3/17", "did you mean 'modular'"),
        ("tirmath/modular/d9/17", "difficulty must be d0 to d5"),
    ],
)
def test_source_get_bad_ids(task_id: str, hint: str) -> None:
    with pytest.raises(UnknownTask, match=re.escape(hint)) as info:
        ProceduralMathSource().get(task_id)
    assert str(info.value).startswith(f"unknown task {task_id!r}")
    assert info.value.task_id == task_id


def test_docstring_examples() -> None:
    for module in (math_tasks, datasets):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__


# ------------------------------------------------------------------------------------------------
# JSONL datasets


def test_gsm8k_fixture() -> None:
    source = JsonlMathSource(FIXTURES / "gsm8k_sample.jsonl")
    assert source.format == "gsm8k" and source.name == "gsm8k_sample"
    assert len(source) == 6  # the blank line is skipped
    assert [t.answer for t in source] == ["126", "175", "1500", "33", "15", "780"]
    task = source[2]
    assert task.id == "gsm8k_sample/2" and task.family == "gsm8k"
    assert task.prompt.startswith("A town plants 125 trees")
    assert task.oracle_actions == ("The answer is \\boxed{1500}.",)
    assert source[4].metadata["line"] == 6
    assert source.get("gsm8k_sample/5").answer == "780"
    assert source[-1] == source[5]


def test_math_fixture() -> None:
    source = JsonlMathSource(FIXTURES / "math_sample.jsonl", format="math", name="mini")
    assert len(source) == 7
    answers = [t.answer for t in source]
    assert answers == ["6", "\\frac{5}{6}", "24", "3\\sqrt{5}", "\\frac{1}{9}", "2, 3", "1"]
    assert [t.difficulty for t in source] == [1, 2, 3, 2, 3, 0, 1]
    assert source[2].family == "Number Theory" and source[2].id == "mini/2"
    assert source[1].oracle_actions == ("The answer is \\boxed{\\frac{5}{6}}.",)
    # MATH-500 style row: explicit answer, int level, subject, own id
    last = source.get("demo-precalc-1")
    assert (last.family, last.difficulty, last.metadata["unique_id"]) == (
        "Precalculus",
        1,
        "test/precalculus/demo.json",
    )
    # auto-detection gives the same tasks (with the default name)
    auto = JsonlMathSource(FIXTURES / "math_sample.jsonl")
    assert auto.format == "math" and [t.answer for t in auto] == answers


def test_fixture_answers_verify_with_math_verify() -> None:
    math_verify = pytest.importorskip("math_verify")
    for name in ("gsm8k_sample", "math_sample"):
        for task in JsonlMathSource(FIXTURES / f"{name}.jsonl"):
            gold = math_verify.parse(f"${task.answer}$")
            assert math_verify.verify(gold, math_verify.parse(task.oracle_actions[-1])), task.id


def test_simple_format_and_sampling(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    rows = [
        {"prompt": "What is 2+2?", "answer": "4", "id": "p-1"},
        {"question": "What is 3*3?", "answer": 9},
        {"problem": "What is 1/2 + 1/3?", "answer": "\\frac{5}{6}", "difficulty": 2, "family": "fractions"},
    ]
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
    source = JsonlMathSource(path)
    assert source.format == "simple"
    assert [t.id for t in source] == ["p-1", "mixed/1", "mixed/2"]
    assert [t.answer for t in source] == ["4", "9", "\\frac{5}{6}"]
    assert (source[2].family, source[2].difficulty) == ("fractions", 2)
    drawn = [source.sample(np.random.default_rng(seed)).id for seed in range(30)]
    assert set(drawn) == {"p-1", "mixed/1", "mixed/2"}
    assert drawn == [source.sample(np.random.default_rng(seed)).id for seed in range(30)]
    with pytest.raises(UnknownTask, match="unknown task 'mixed/9'; known ids start with: p-1"):
        source.get("mixed/9")
    with pytest.raises(UnknownTask):
        source[3]


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=re.escape("nope.jsonl")):
        JsonlMathSource(tmp_path / "nope.jsonl")


@pytest.mark.parametrize(
    ("content", "fmt", "patterns"),
    [
        (
            '{"question": "q", "answer": "#### 1"}\n{"question": "q2", "answer": "#### 2"\n',
            "auto",
            [r"broken\.jsonl:2", "not valid JSON", "question"],
        ),
        (
            '{"question": "q", "answer": "#### 1"}\n\n{"question": "q2"}\n',
            "auto",
            [r":3", "missing key 'answer'", "####"],
        ),
        ('{"question": "q", "answer": "no marker"}\n', "gsm8k", [r":1", "####"]),
        ('{"problem": "p", "solution": "no box", "level": "Level 2"}\n', "auto", [r":1", r"\\boxed"]),
        ('{"problem": "p", "level": "Level 2"}\n', "math", [r":1", "neither 'answer' nor 'solution'"]),
        ('{"text": "p", "label": 3}\n', "auto", [r":1", "cannot tell the row format", "gsm8k rows need"]),
        ('{"prompt": "p", "answer": ""}\n', "simple", [r":1", "'answer' is empty"]),
        ('{"prompt": ["p"], "answer": "1"}\n', "simple", [r":1", "'prompt' must be a string"]),
        ("[1, 2]\n", "auto", [r":1", "JSON object"]),
        (
            '{"prompt": "a", "answer": "1", "id": "x"}\n{"prompt": "b", "answer": "2", "id": "x"}\n',
            "auto",
            [r":2", "duplicate task id 'x'", "line 1"],
        ),
        ("", "auto", ["no rows"]),
        ("\n  \n\n", "gsm8k", ["no rows", "question"]),
    ],
)
def test_broken_files(tmp_path: Path, content: str, fmt: str, patterns: list[str]) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(TaskFormatError) as info:
        JsonlMathSource(path, format=fmt)  # type: ignore[arg-type]
    message = str(info.value)
    assert "broken.jsonl" in message
    for pattern in patterns:
        assert re.search(pattern, message), (pattern, message)


def test_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="choose from: auto, gsm8k, math, simple"):
        JsonlMathSource(FIXTURES / "math_sample.jsonl", format="hendrycks")  # type: ignore[arg-type]


def test_answer_extraction() -> None:
    assert extract_boxed(r"$\boxed{\frac{a}{b^{2}}}$ and later \boxed{x+{y}}") == "x+{y}"
    assert extract_boxed(r"\boxed{\text{(B)}}") == r"\text{(B)}"
    assert extract_boxed(r"good \boxed{7} then broken \boxed{8") == "7"
    assert extract_boxed(r"so the answer is $\boxed 5$.") == "5"
    assert extract_boxed("") is None
    assert gsm8k_answer("work\n#### 1,234,567") == "1234567"
    assert gsm8k_answer("#### -3") == "-3"
    assert gsm8k_answer("#### 12.") == "12"
    assert gsm8k_answer("####   ") is None
