"""``agentrl new-domain NAME`` writes a domain skeleton that passes ``agentrl check`` and its own tests as written."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from agentrl.cli import main
from agentrl.scaffold import ScaffoldError, camel_name, check_name, summary, write_domain

TEMPLATE_FILES = ["__init__.py", "actions.py", "datasets.py", "env.py", "tasks.py", "verify.py"]


def _agentrl() -> list[str]:
    """The installed ``agentrl`` console script (its sys.path does not hold the current folder), else ``-m``."""
    script = Path(sys.executable).with_name("agentrl")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "agentrl.cli"]


def _run(argv: list[str], cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)  # the package must come from the folder, as for a user
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.timeout(600)
def test_new_domain_in_a_scratch_folder_then_agentrl_check_passes(tmp_path: Path) -> None:
    """The acceptance line: `agentrl new-domain demo_domain`, then the check command it prints, pass."""
    made = _run([*_agentrl(), "new-domain", "demo_domain"], tmp_path)
    assert made.returncode == 0, made.stderr
    package = tmp_path / "demo_domain"
    assert sorted(path.name for path in package.iterdir()) == sorted([*TEMPLATE_FILES, "test_demo_domain.py"])
    last = made.stdout.strip().splitlines()[-1].strip()
    assert last == "agentrl check AgentRL/DemoDomain-v0 --import demo_domain", made.stdout
    for name in TEMPLATE_FILES:
        assert f"demo_domain/{name}" in made.stdout  # each file is listed with its job

    checked = _run([*_agentrl(), *shlex.split(last)[1:]], tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "AgentRL/DemoDomain-v0: all checks passed" in checked.stdout

    tested = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "demo_domain"], tmp_path)
    assert tested.returncode == 0, tested.stdout[-3000:] + tested.stderr[-3000:]
    assert "7 passed" in tested.stdout, tested.stdout[-3000:]


def test_check_finds_no_outside_id_without_import_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "AgentRL/NotWrittenYet-v0"]) == 2
    assert "--import PACKAGE" in capsys.readouterr().err
    assert main(["check", "AgentRL/NotWrittenYet-v0", "--import", "no_such_domain_package"]) == 2
    err = capsys.readouterr().err
    assert "--import no_such_domain_package: No module named 'no_such_domain_package'" in err


def test_dir_option_and_the_printed_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "new" / "place"
    assert main(["new-domain", "web_shop", "--dir", str(target)]) == 0
    out = capsys.readouterr().out
    assert (target / "web_shop" / "env.py").is_file()
    assert out.strip().splitlines()[-1].strip() == (
        f"cd {shlex.quote(str(target))} && agentrl check AgentRL/WebShop-v0 --import web_shop"
    )
    assert f"cd {shlex.quote(str(target))} && python -m pytest web_shop" in out
    skeleton = write_domain("second_shop", target)
    assert summary(skeleton, cwd=target).splitlines()[-1].strip() == (
        "agentrl check AgentRL/SecondShop-v0 --import second_shop"
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Bad-Name", "use lowercase snake_case, a letter first (e.g. bad_name)"),
        ("demo-domain", "use lowercase snake_case"),
        ("2fast", "use lowercase snake_case"),
        ("_private", "use lowercase snake_case"),
        ("", "use lowercase snake_case"),
        ("x" * 61, "at most 60 characters"),
        ("class", "it is a Python keyword"),
        ("json", "standard library"),
        ("numpy", "already finds"),
        ("agentrl", "already finds"),
        ("letter", "AgentRL/Letter-v0 is already registered"),  # the trainer's toy env
    ],
)
def test_bad_names_are_refused_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, message: str
) -> None:
    assert main(["new-domain", name, "--dir", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_an_existing_folder_or_file_is_refused_untouched(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "my_domain").mkdir()
    (tmp_path / "my_domain" / "keep.txt").write_text("mine")
    assert main(["new-domain", "my_domain", "--dir", str(tmp_path)]) == 2
    assert "my_domain already exists" in capsys.readouterr().err
    assert [path.name for path in (tmp_path / "my_domain").iterdir()] == ["keep.txt"]
    (tmp_path / "other_domain").write_text("a file")
    with pytest.raises(ScaffoldError, match="other_domain already exists"):
        write_domain("other_domain", tmp_path)
    with pytest.raises(ScaffoldError, match="other_domain already exists and is not a folder"):
        write_domain("third_domain", tmp_path / "other_domain")  # --dir is a file


def test_names() -> None:
    assert camel_name("demo_domain") == "DemoDomain" and camel_name("a__b2") == "AB2"
    assert check_name("my_domain") == "my_domain"
