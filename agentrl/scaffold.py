r"""``agentrl new-domain NAME``: write the skeleton of a new text domain, one file per job.

Every text domain has the same files with the same jobs (docs/design/layers.md, "One domain, one template"; the
built-in ``agentrl/envs/tirmath`` and ``agentrl/envs/sql`` follow it):

* ``__init__.py``: registers the id (``register_domain``), so that importing the package makes ``gym.make`` find it;
* ``env.py``: the env class (an ``AgentEnv``) and its Gymnasium-style docstring;
* ``actions.py``: the ``ActionSet``, ``describe()`` for the prompt and ``parse(text)``;
* ``verify.py``: the verifier, a pure function with a doctest;
* ``tasks.py``: task generation (procedural, seeded) and each task's oracle;
* ``datasets.py``: loaders of the benchmark's own files.

:func:`write_domain` writes them as a package ``NAME/``, filled with a tiny working example (add up
the prices of a basket, looked up with a tool), plus ``test_NAME.py``, which runs
:func:`~agentrl.testing.check_domain` and the doctests. Their texts are template files in
``agentrl/scaffold_templates/`` (package data, ``<file name>.tmpl``), read with :mod:`importlib.resources`. The
skeleton passes ``agentrl check`` as written:

>>> import shutil, tempfile
>>> folder = tempfile.mkdtemp()
>>> skeleton = write_domain("demo_domain", folder)
>>> skeleton.env_id, skeleton.check_command
('AgentRL/DemoDomain-v0', 'agentrl check AgentRL/DemoDomain-v0 --import demo_domain')
>>> sorted(path.name for path in skeleton.package.iterdir())
['__init__.py', 'actions.py', 'datasets.py', 'env.py', 'tasks.py', 'test_demo_domain.py', 'verify.py']
>>> write_domain("demo_domain", folder)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
agentrl.scaffold.ScaffoldError: .../demo_domain already exists; pick another NAME, or --dir another folder
>>> shutil.rmtree(folder)
"""

from __future__ import annotations

import importlib.util
import keyword
import os
import re
import shlex
import shutil
import string
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from agentrl.core.errors import AgentRLError

__all__ = ["DomainSkeleton", "ScaffoldError", "camel_name", "check_name", "summary", "write_domain"]

_NAME = re.compile(r"[a-z][a-z0-9_]*")
_MAX_NAME = 60


class ScaffoldError(AgentRLError, ValueError):
    """``new-domain`` cannot write the skeleton: a bad name or a folder that exists; the message says why."""


@dataclass(frozen=True)
class DomainSkeleton:
    """What :func:`write_domain` wrote.

    Attributes:
        name: the package name (``demo_domain``).
        env_id: the id its ``__init__.py`` registers (``AgentRL/DemoDomain-v0``).
        package: the package folder written.
        files: every file written and its job, in the order of the template.
        check_command: the command that checks the domain, run from ``package``'s parent folder.
        test_command: the command that runs its tests, from the same folder.
    """

    name: str
    env_id: str
    package: Path
    files: tuple[tuple[Path, str], ...]
    check_command: str
    test_command: str


def camel_name(name: str) -> str:
    """The CamelCase domain name of a package name (the middle of the env id).

    >>> camel_name("demo_domain"), camel_name("maze2"), camel_name("web_shop_v2")
    ('DemoDomain', 'Maze2', 'WebShopV2')
    """
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part)


def check_name(name: str) -> str:
    """Refuse a NAME that cannot be the package (and the ``--import``) of a new domain; return it.

    A name is lowercase ``snake_case`` (letters, digits, ``_``; a letter first), not a Python keyword,
    and not the name of a module Python already finds (the standard library, an installed package):
    ``import NAME`` must find the new package.

    >>> check_name("demo_domain")
    'demo_domain'
    >>> check_name("My-Domain")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agentrl.scaffold.ScaffoldError: bad domain name 'My-Domain': use lowercase snake_case, ... (e.g. my_domain)
    >>> check_name("json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agentrl.scaffold.ScaffoldError: bad domain name 'json': ... standard library; pick another name
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > _MAX_NAME:
        hint = camel_to_snake(name) if isinstance(name, str) else ""
        example = hint if hint and _NAME.fullmatch(hint) else "my_domain"
        raise ScaffoldError(
            f"bad domain name {name!r}: use lowercase snake_case, a letter first (e.g. {example})"
            + (f", at most {_MAX_NAME} characters" if isinstance(name, str) and len(name) > _MAX_NAME else "")
        )
    if keyword.iskeyword(name):
        raise ScaffoldError(f"bad domain name {name!r}: it is a Python keyword, so `import {name}` cannot work")
    if name in sys.stdlib_module_names:
        raise ScaffoldError(
            f"bad domain name {name!r}: `import {name}` would find the module of that name in Python's standard "
            "library; pick another name"
        )
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        found = None
    if found is not None:
        where = found.origin or ", ".join(found.submodule_search_locations or []) or "an installed package"
        raise ScaffoldError(
            f"bad domain name {name!r}: `import {name}` already finds {where}; pick another name"
        )
    return name


def camel_to_snake(name: str) -> str:
    """A guess at the snake_case spelling of a name, for the error message.

    >>> camel_to_snake("My-Domain"), camel_to_snake("WebShop")
    ('my_domain', 'web_shop')
    """
    text = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name.strip())
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def write_domain(name: str, directory: str | os.PathLike[str] = ".") -> DomainSkeleton:
    """Write the skeleton of the domain ``name`` as the package ``directory/name/``.

    Args:
        name: the package name, lowercase snake_case (``demo_domain``); the id is
            ``AgentRL/<CamelName>-v0`` (``AgentRL/DemoDomain-v0``).
        directory: the folder to write the package into (created if missing).

    Returns:
        What was written, with the commands that check it.

    Raises:
        ScaffoldError: a bad name (see :func:`check_name`), an id that is already registered, or a
            ``name`` folder (or file) that already exists: nothing is overwritten.
    """
    import gymnasium as gym

    import agentrl  # noqa: F401  # registers the built-in ids, so a clash with one is caught here

    check_name(name)
    camel = camel_name(name)
    env_id = f"AgentRL/{camel}-v0"
    parent = Path(directory).expanduser().resolve()
    package = parent / name
    if package.exists() or package.is_symlink():
        raise ScaffoldError(f"{package} already exists; pick another NAME, or --dir another folder")
    if env_id in gym.registry:
        raise ScaffoldError(f"{env_id} is already registered (agentrl list shows it); pick another name")
    values = {"package": name, "camel": camel, "env_id": env_id}
    try:
        parent.mkdir(parents=True, exist_ok=True)
        package.mkdir()
    except FileExistsError:  # --dir is a file, or NAME/ was made between the check and now
        what = package if parent.is_dir() else parent
        raise ScaffoldError(f"{what} already exists and is not a folder to write into; pick another") from None
    except OSError as exc:
        raise ScaffoldError(f"cannot write {package}: {exc}") from None
    files = []
    try:
        for filename, job in _FILES:
            path = package / filename.replace("NAME", name)
            path.write_text(string.Template(template(filename)).substitute(values), encoding="utf-8")
            files.append((path, string.Template(job).substitute(values)))
    except OSError as exc:  # a full disk...: leave nothing half-written
        shutil.rmtree(package, ignore_errors=True)
        raise ScaffoldError(f"cannot write {package}: {exc}") from None
    return DomainSkeleton(
        name=name,
        env_id=env_id,
        package=package,
        files=tuple(files),
        check_command=f"agentrl check {env_id} --import {name}",
        test_command=f"python -m pytest {name}",
    )


def summary(skeleton: DomainSkeleton, cwd: str | os.PathLike[str] | None = None) -> str:
    """What ``agentrl new-domain`` prints: the files and their jobs, what to fill in, then the check command.

    The last line is the exact command that checks the domain, run from ``cwd`` (default: the current
    folder): ``cd`` to the package's parent first when that is another folder.
    """
    parent = skeleton.package.parent
    here = Path(cwd if cwd is not None else os.getcwd()).resolve()
    go = "" if parent == here else f"cd {shlex.quote(str(parent))} && "
    shown = [(f"{skeleton.name}/{path.name}", job) for path, job in skeleton.files]
    width = max(len(name) for name, _ in shown)
    lines = [f"Wrote {skeleton.env_id}, a text domain, as the package {skeleton.name}/ in {parent}:"]
    lines += [f"  {name:<{width}}  {job}" for name, job in shown]
    lines += ["", "It is a tiny working example (add up prices looked up with a tool). Fill in, keeping it green:"]
    lines += [f"  {name:<12} {what}" for name, what in _FILL_IN]
    lines += ["", f"Its tests:  {go}{skeleton.test_command}", "Check it (what CI runs on every domain):"]
    lines.append(f"  {go}{skeleton.check_command}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------
# The template: one file a job in agentrl/scaffold_templates/ (package data; ``NAME`` in a file name is the
# package). ``$package``, ``$camel`` and ``$env_id`` are filled in (string.Template); the files hold no other
# ``$``. They are not modules of agentrl (they are not Python until filled in), so ruff and mypy do not read
# them: ``tests/cli/test_scaffold.py`` writes the skeleton and runs ``agentrl check`` and its tests on it.

TEMPLATE_FOLDER = "scaffold_templates"
"""The folder of ``agentrl`` that holds the template files (``<file name>.tmpl``)."""

#: (file name, its job), in the order ``new-domain`` lists them; the template of each is ``<file name>.tmpl``
_FILES: tuple[tuple[str, str], ...] = (
    ("__init__.py", "registers $env_id when imported (register_domain)"),
    ("env.py", "the env class (an AgentEnv) and its Gymnasium-style docstring"),
    ("actions.py", "the ActionSet: describe() for the prompt, parse(text) -> Action or ParseError"),
    ("verify.py", "the verifier: a pure function of (task, answer, state), with a doctest"),
    ("tasks.py", "task generation (procedural, seeded) and each task's oracle actions"),
    ("datasets.py", "loaders of the benchmark's own files (a JSONL reader here)"),
    ("test_NAME.py", "check_domain and the doctests, for pytest"),
)


def template(filename: str) -> str:
    """The template of one file of the skeleton (``$package``, ``$camel`` and ``$env_id`` not filled in yet).

    >>> "class ${camel}Env(AgentEnv):" in template("env.py")
    True
    """
    return (resources.files("agentrl") / TEMPLATE_FOLDER / f"{filename}.tmpl").read_text(encoding="utf-8")


#: what to change in each file, after the example (``new-domain`` prints it)
_FILL_IN = (
    ("tasks.py", "your task family: a task is a pure function of its id, with oracle_actions that solve it"),
    ("actions.py", "your tools and your answer's format; parse() never raises (a ParseError says what to write)"),
    ("verify.py", "your scoring rule: pure (no sandbox, no model), with a doctest"),
    ("env.py", "the docstring's sections and arguments; the tools: execute_action, or a sandbox_factory to run code"),
    ("datasets.py", "a loader of the benchmark's own files, if it ships some (else delete it and dataset=)"),
    ("__init__.py", "the line `agentrl list` shows; bump the version when the reward or the dynamics change"),
)
