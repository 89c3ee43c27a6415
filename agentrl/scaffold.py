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
:func:`~agentrl.testing.check_domain` and the doctests. The skeleton passes ``agentrl check`` as written:

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
        for filename, job, template in _TEMPLATES:
            path = package / filename.replace("NAME", name)
            path.write_text(string.Template(template).substitute(values), encoding="utf-8")
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
# The template. ``$package``, ``$camel`` and ``$env_id`` are filled in (string.Template); the files
# hold no other ``$``. ``tests/test_scaffold.py`` writes it, runs ``agentrl check`` and its tests on it.

_INIT = '''"""$camel: an AgentRL text domain. ``import $package`` registers ``$env_id``.

The files, one job each (AgentRL's template for every domain):

* ``env.py``: the env class and its Gymnasium-style docstring;
* ``actions.py``: the action set, ``describe()`` for the prompt and ``parse(text)``;
* ``verify.py``: the verifier, a pure function with a doctest;
* ``tasks.py``: task generation (procedural, seeded) and each task's oracle;
* ``datasets.py``: loaders of the benchmark's own files.

Check it from the folder that holds this package::

    agentrl check $env_id --import $package
    python -m pytest $package
"""

from __future__ import annotations

from agentrl.core import register_domain

#: The id ``gym.make`` takes. Bump the version (``version=1``) when the reward or the dynamics change.
ENV_ID = register_domain(
    "$camel",
    f"{__name__}.env:${camel}Env",
    description="Fill in: one line for `agentrl list` (the example: add up prices looked up with a tool).",
    tags=("text",),
)

__all__ = ["ENV_ID"]
'''

_ENV = '''"""``$env_id``: the env (fill in: one line on what the agent does here)."""

from __future__ import annotations

import os
from typing import Any

from agentrl.core import Action, AgentEnv, Task

from .actions import ${camel}Actions
from .datasets import load_jsonl
from .tasks import ProceduralSource
from .verify import verify

__all__ = ["SYSTEM_PROMPT", "${camel}Env"]

#: The role and the rules for an LLM (the action set's instructions are appended).
SYSTEM_PROMPT = "You answer questions about a shop's prices. Look each price up; never guess one."


class ${camel}Env(AgentEnv):
    r"""Work out what a basket costs, looking prices up with a tool (fill in: your task, in one line).

    ## Description

    Fill in: what the agent is asked, what its tools do, what ends an episode. The example: the agent
    is asked what a basket of items costs in a shop; it looks prices up with ``<price>item</price>``,
    one item a turn, and answers with the total in ``<answer>...</answer>``.

    ## Action Space

    ``UnicodeText(max_action_chars)``: the agent's message (any ``str``); see
    :class:`~$package.actions.${camel}Actions` for the format.

    ## Observation Space

    ``UnicodeText(max_observation_chars)``. After ``reset``: the task and the action format. After a tool
    call: its result (``apple costs 3``) or ``[tool error] ...``. After a malformed turn: ``[error] ...``,
    saying what to write.

    ## Rewards

    1.0 for the right total, else 0.0 (:func:`~$package.verify.verify`). Every other turn: 0.

    ## Starting State

    A task drawn with the env's ``np_random`` (``reset(seed=...)`` is reproducible), or chosen with
    ``options={"task_id": ...}`` (or ``{"task_index": i}`` with a dataset file).

    ## Episode End

    Terminated by an answer (``info["done_reason"] == "answered"``). Truncated when ``max_turns`` turns
    are spent (``"max_turns"``).

    ## Arguments

    ```python
    gym.make("$env_id", dataset=None, max_turns=6, render_mode=None)
    ```

    * ``dataset``: a JSONL file of baskets (:func:`~$package.datasets.load_jsonl`) instead of the generator.
    * ``max_turns``: the turn budget.

    ## Version History

    * v0: initial release.

    >>> import gymnasium as gym, $package
    >>> env = gym.make("$env_id")
    >>> observation, info = env.reset(seed=0)
    >>> info["task_id"].startswith("$package/"), "<price>" in observation
    (True, True)
    >>> env.close()
    """

    def __init__(
        self,
        *,
        dataset: str | os.PathLike[str] | None = None,
        max_turns: int = 6,
        max_observation_chars: int = 16_000,
        max_action_chars: int = 8_000,
        render_mode: str | None = None,
    ) -> None:
        task_source: Any = load_jsonl(dataset) if dataset is not None else ProceduralSource()
        super().__init__(
            task_source=task_source,
            action_set=${camel}Actions(),
            verifier=verify,
            # The price tool only reads the task's own data (execute_action below), so no sandbox. Actions
            # that run code or queries run in one: e.g. sandbox_factory=lambda: PythonSandbox(mode="session")
            # (agentrl.sandboxes.python), and AgentEnv sends each tool call to its execute().
            sandbox_factory=None,
            max_turns=max_turns,
            max_observation_chars=max_observation_chars,
            max_action_chars=max_action_chars,
            render_mode=render_mode,
            system_prompt=SYSTEM_PROMPT,
        )

    def execute_action(self, action: Action) -> tuple[str, str | None]:
        """The price tool: one lookup in the task's price list; an unknown item is a tool error."""
        prices: dict[str, int] = dict(self.task.metadata["prices"])
        if action.content in prices:
            return f"{action.content} costs {prices[action.content]}", None
        error = f"the shop has no {action.content!r}; it sells {', '.join(sorted(prices))}"
        return f"[tool error] {error}", error

    def initial_observation(self, task: Task) -> str:
        """The task, then the action format."""
        return f"{task.prompt}\\n\\n{self.action_set.describe()}"
'''

_ACTIONS = '''"""The action set of $camel: what the agent may write, and how its text becomes an action.

Fill in: your tools and the format of the final answer. ``parse`` never raises on the agent's text: a
turn it cannot read is a ``ParseError`` whose message says what to write (the agent sees ``[error] ...``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agentrl.core import Action, ActionSet, ParseError
from agentrl.core.actions import function_schema

__all__ = ["${camel}Actions"]

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_PRICE = re.compile(r"<price>(.*?)</price>", re.DOTALL)
_HOW = "write <price>item</price> to look a price up, or <answer>number</answer> to answer"


class ${camel}Actions(ActionSet):
    """``<price>item</price>`` looks a price up (the tool); ``<answer>n</answer>`` is the final answer.

    >>> actions = ${camel}Actions()
    >>> turn = actions.parse("Let me check. <price>apple</price>")
    >>> turn.kind, turn.content
    ('price', 'apple')
    >>> actions.parse("<answer> 7 </answer>").content
    '7'
    >>> actions.parse("It costs 7.").message
    'write <price>item</price> to look a price up, or <answer>number</answer> to answer'
    """

    #: the action kinds that end the episode and go to the verifier
    final_kinds = frozenset({"answer"})

    def describe(self) -> str:
        """The action format, for the prompt."""
        return (
            "Look a price up with <price>item</price> (one item a turn). When you know the total, answer with "
            "<answer>number</answer>; that ends the episode."
        )

    def parse(self, text: str) -> Action | ParseError:
        """One turn -> an action, or a ``ParseError`` saying what to write; never raises."""
        answer = _ANSWER.search(text)
        if answer:
            return Action("answer", answer.group(1).strip(), raw=text)
        call = _PRICE.search(text)
        if call:
            return Action("price", call.group(1).strip(), raw=text)
        if "<answer>" in text or "<price>" in text:
            return ParseError("close your tag: <price>item</price> or <answer>number</answer>", raw=text)
        return ParseError(_HOW, raw=text)

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The same actions as OpenAI function schemas, for agents that call tools."""
        return [
            function_schema("price", "Look up the price of one item in the shop.", item="the item's name"),
            function_schema("answer", "Give the total; ends the episode.", answer="the total, a number"),
        ]

    def format_final(self, answer: str) -> str:
        """The text of a final answer (the oracle's last turn; ``agentrl check`` sends a garbage one)."""
        return f"<answer>{answer}</answer>"

    def format_price(self, item: str) -> str:
        """The text of a price lookup (the oracle's turns)."""
        return f"<price>{item}</price>"

    def malformed_examples(self) -> Sequence[str]:
        """Turns that must not parse (``agentrl check`` sends each and expects an ``[error]`` observation)."""
        return ("", "It costs 7.", "<answer>7", "<price>apple")
'''

_VERIFY = '''"""The verifier of $camel: a pure function of the task and the final answer.

Fill in: your scoring rule. Keep it pure (no sandbox, no model, no clock), so that it is importable
and testable alone, and give it a doctest. ``Score.breakdown`` becomes ``info["reward_components"]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentrl.core import Score, Task

__all__ = ["verify"]


def verify(task: Task, answer: str, state: Mapping[str, Any]) -> Score:
    """1.0 when ``answer`` is the task's total as a number (``7``, ``7.0``, `` 7 ``), else 0.0.

    ``state`` is what the env adds (the turn, the transcript); this rule does not need it.

    >>> task = Task("$package/0", "What does the basket cost?", "7")
    >>> verify(task, "7.0", {}).value, verify(task, "8", {}).value, verify(task, "seven", {}).value
    (1.0, 0.0, 0.0)
    """
    try:
        correct = float(answer.strip()) == float(task.answer)
    except ValueError:
        correct = False
    value = 1.0 if correct else 0.0
    return Score(value, {"correct": value}, "the right total" if correct else "not the total")
'''

_TASKS = '''"""Task generation for $camel: procedural tasks drawn from a seed, each with its oracle.

Fill in: your task family in place of the example (a basket of items whose prices the agent looks up).
Keep the rules that make ``reset(seed=...)`` reproducible and every task checkable:

* a task is a pure function of its id: ``source.get(task.id) == task``;
* ``sample(rng)`` draws only from ``rng`` (the env's ``np_random``);
* every task carries ``oracle_actions``: turns that solve it, which ``agentrl check`` plays.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence

import numpy as np
from agentrl.core import Task, UnknownTask

from .actions import ${camel}Actions

__all__ = ["ID_PREFIX", "ITEMS", "ProceduralSource", "generate_task", "make_task"]

#: every generated task id is ``"<ID_PREFIX>/<seed>"``
ID_PREFIX = "$package"
#: what the shop may sell
ITEMS = ("apple", "bread", "cheese", "dates", "eggs", "flour", "grapes", "honey")
_ID = re.compile(re.escape(ID_PREFIX) + r"/(\\d+)")
_ACTIONS = ${camel}Actions()


def make_task(task_id: str, prices: Mapping[str, int], basket: Sequence[str]) -> Task:
    """The task "what does ``basket`` cost?" in a shop with ``prices``, with its oracle.

    Raises:
        KeyError: an item of the basket has no price.

    >>> task = make_task("shop/0", {"apple": 3, "bread": 4}, ["apple", "bread"])
    >>> task.answer, task.oracle_actions
    ('7', ('<price>apple</price>', '<price>bread</price>', '<answer>7</answer>'))
    """
    total = sum(prices[item] for item in basket)
    prompt = f"What does this basket cost in total: {', '.join(basket)}? The shop sells {', '.join(sorted(prices))}."
    oracle = (*(_ACTIONS.format_price(item) for item in basket), _ACTIONS.format_final(str(total)))
    return Task(
        task_id,
        prompt,
        str(total),
        family="basket",
        difficulty=len(basket),
        oracle_actions=oracle,
        metadata={"prices": dict(prices)},
    )


def generate_task(seed: int) -> Task:
    """The task of ``seed``: a shop of 4 items priced 1 to 9, and a basket of 2 of them.

    >>> generate_task(3) == generate_task(3), generate_task(3).id
    (True, '$package/3')
    """
    rng = random.Random(seed)
    shop = rng.sample(ITEMS, 4)
    prices = {item: rng.randint(1, 9) for item in shop}
    return make_task(f"{ID_PREFIX}/{seed}", prices, rng.sample(shop, 2))


class ProceduralSource:
    """The env's task source: one task per seed (implements ``agentrl.core.TaskSource``).

    >>> source = ProceduralSource()
    >>> task = source.sample(np.random.default_rng(0))
    >>> source.get(task.id) == task
    True
    """

    def sample(self, rng: np.random.Generator) -> Task:
        """Draw a task using only ``rng``."""
        return generate_task(int(rng.integers(0, 2**31 - 1)))

    def get(self, task_id: str) -> Task:
        """The task with this id, or ``UnknownTask``."""
        match = _ID.fullmatch(task_id)
        if match is None:
            raise UnknownTask(task_id, hint=f"generated ids look like '{ID_PREFIX}/<seed>'")
        return generate_task(int(match.group(1)))
'''

_DATASETS = '''"""Loaders of the benchmark's own files for $camel.

Fill in: read the files your benchmark ships, in their own format, into tasks (with their oracles
where the data allows). The example reads a JSONL file, one basket a line::

    {"id": "shop-1", "prices": {"apple": 3, "bread": 4}, "basket": ["apple", "bread"]}

``gym.make("$env_id", dataset="baskets.jsonl")`` then plays its tasks, and
``reset(options={"task_index": i})`` sweeps them in order.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agentrl.core import JsonlTaskSource, Task

from .tasks import make_task

__all__ = ["load_jsonl"]


def load_jsonl(path: str | os.PathLike[str]) -> JsonlTaskSource:
    """The tasks of a JSONL file of baskets; a row without ``id`` is ``"<file stem>/<line>"``.

    Raises:
        FileNotFoundError: no such file.
        agentrl.core.TaskFormatError: a line that is not a basket (the message names the file and line).

    >>> import json, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "baskets.jsonl")
    >>> with open(path, "w") as file:
    ...     print(json.dumps({"prices": {"apple": 3, "bread": 4}, "basket": ["apple", "bread"]}), file=file)
    >>> source = load_jsonl(path)
    >>> len(source), source[0].id, source[0].answer
    (1, 'baskets/1', '7')
    """
    stem = Path(path).stem

    def row_to_task(row: dict[str, Any], line: int) -> Task:
        prices = {str(item): int(price) for item, price in row["prices"].items()}
        return make_task(str(row.get("id", f"{stem}/{line}")), prices, [str(item) for item in row["basket"]])

    return JsonlTaskSource(path, row_to_task)
'''

_TEST = '''"""The tests of $camel: the checks every AgentRL domain passes, the doctests, a dataset file.

Run them from the folder that holds the package: ``python -m pytest $package``.
"""

from __future__ import annotations

import doctest
import json
from pathlib import Path
from types import ModuleType

import gymnasium as gym
import pytest
from agentrl.testing import check_domain

from $package import ENV_ID, actions, datasets, env, tasks, verify


def test_check_domain() -> None:
    """What ``agentrl check`` runs: check_env, determinism, the oracle, wrong and malformed turns, the budget."""
    check_domain(ENV_ID, seeds=(0, 1, 2))


@pytest.mark.parametrize("module", [actions, datasets, env, tasks, verify], ids=lambda module: module.__name__)
def test_doctests(module: ModuleType) -> None:
    """Every part's doctest passes (the verifier's too: it is a pure function)."""
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0


def test_a_dataset_file(tmp_path: Path) -> None:
    """The env plays the tasks of a JSONL file in order, and the oracle solves each."""
    path = tmp_path / "baskets.jsonl"
    rows = [{"prices": {"apple": 3, "bread": 4}, "basket": ["apple", "bread"]},
            {"id": "two", "prices": {"eggs": 2, "honey": 9}, "basket": ["honey"]}]
    path.write_text("".join(json.dumps(row) + "\\n" for row in rows))
    made = gym.make(ENV_ID, dataset=str(path))
    base = made.unwrapped
    assert isinstance(base, env.${camel}Env)
    for index, task_id in enumerate(["baskets/1", "two"]):
        _, info = made.reset(options={"task_index": index})
        assert info["task_id"] == task_id
        for action in base.task.oracle_actions:
            _, reward, terminated, _, info = made.step(action)
        assert terminated and reward == 1.0, info
    made.close()
'''

#: (file name, its job, its template), in the order ``new-domain`` lists them
_TEMPLATES: tuple[tuple[str, str, str], ...] = (
    ("__init__.py", "registers $env_id when imported (register_domain)", _INIT),
    ("env.py", "the env class (an AgentEnv) and its Gymnasium-style docstring", _ENV),
    ("actions.py", "the ActionSet: describe() for the prompt, parse(text) -> Action or ParseError", _ACTIONS),
    ("verify.py", "the verifier: a pure function of (task, answer, state), with a doctest", _VERIFY),
    ("tasks.py", "task generation (procedural, seeded) and each task's oracle actions", _TASKS),
    ("datasets.py", "loaders of the benchmark's own files (a JSONL reader here)", _DATASETS),
    ("test_NAME.py", "check_domain and the doctests, for pytest", _TEST),
)

#: what to change in each file, after the example (``new-domain`` prints it)
_FILL_IN = (
    ("tasks.py", "your task family: a task is a pure function of its id, with oracle_actions that solve it"),
    ("actions.py", "your tools and your answer's format; parse() never raises (a ParseError says what to write)"),
    ("verify.py", "your scoring rule: pure (no sandbox, no model), with a doctest"),
    ("env.py", "the docstring's sections and arguments; the tools: execute_action, or a sandbox_factory to run code"),
    ("datasets.py", "a loader of the benchmark's own files, if it ships some (else delete it and dataset=)"),
    ("__init__.py", "the line `agentrl list` shows; bump the version when the reward or the dynamics change"),
)
