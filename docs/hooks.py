"""MkDocs hooks: the pages the code already says, generated at build time so they cannot drift.

* ``envs/<id>.md``: one page per id that ``agentrl list`` prints (every id in the registry), from the
  env's docstring (its Gymnasium sections), what the registry knows (entry point, kwargs, group, tags,
  deprecation), the spaces and ``info`` keys of a real ``reset`` and ``step``, the first observation,
  and a snippet that the build runs. Pixel envs show their own first observation, rendered by the env;
  the games and the desktop an animated GIF of the oracle playing. A picture that cannot be rendered
  fails the build (:class:`DocsBuildError`), as a snippet that does not run does.
* ``envs/index.md``: the table of every id, and ``multiagent/<name>.md``, one page per PettingZoo module.
* ``reproduce.md``: each recorded benchmark result (``benchmarks/results/*.json``), its command and its
  figures, read from the file, with the plots beside them.
* ``design/redteam.md``: ``agentrl redteam``'s reward-hack probes, a table per env, read from
  ``benchmarks/results/redteam.json`` (the probes never run at build time).

``mkdocs build`` imports this file (``hooks:`` in ``mkdocs.yml``); ``tests/artifacts/test_docs.py`` imports it to
compare the pages with the registry.
"""

from __future__ import annotations

import importlib
import inspect
import io
import json
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: steps of the oracle a game's or the desktop's GIF shows (at most)
GIF_STEPS = 24


class DocsBuildError(RuntimeError):
    """A generated page could not be made (an env that does not start, a picture not rendered)."""


@dataclass
class Page:
    """A generated file: its path under the site and its content."""

    path: str
    content: str | bytes


@dataclass
class EnvFacts:
    """What one ``reset`` and one oracle ``step`` of an env id showed."""

    observation_space: str
    action_space: str
    first_observation: Any
    info_keys: list[str]
    deprecated_info: dict[str, str]
    doc: str
    extra_doc: str = ""
    frames: list[Any] = field(default_factory=list)


# --- docstrings to Markdown ---------------------------------------------------------------------------------

_ROLE = re.compile(r":(?:class|func|meth|data|attr|mod|exc|obj):`(~?)([^`]+)`")


def rst_inline(text: str) -> str:
    """Sphinx roles and RST literals as Markdown code.

    >>> rst_inline("see :class:`~agentrl.core.env.AgentEnv` and ``info['turn']``")
    "see `AgentEnv` and `info['turn']`"
    """
    text = _ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`", text)
    return re.sub(r"``(.+?)``", r"`\1`", text)


def docstring_markdown(doc: str, *, level: int = 3) -> str:
    r"""A docstring in our style (Gymnasium ``## Section`` headings, Google ``Args:``, doctests) as Markdown.

    Headings move to ``level``; an ``Args:`` block becomes an "Arguments" list; doctest lines become a
    ``pycon`` block.

    >>> print(docstring_markdown("Intro.\n\n## Rewards\n\n1 for ``x``.\n\nArgs:\n    a: one\n        more.\n"))
    Intro.
    <BLANKLINE>
    ### Rewards
    <BLANKLINE>
    1 for `x`.
    <BLANKLINE>
    ### Arguments
    <BLANKLINE>
    - `a`: one more.
    <BLANKLINE>
    """
    out: list[str] = []
    lines = doc.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            out.append("#" * level + " " + line[3:].strip())
        elif line.strip() in ("Args:", "Arguments:", "Parameters:"):
            out += ["#" * level + " Arguments", ""]
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith("    ")):
                item = lines[i]
                if item.startswith("    ") and not item.startswith("     ") and ":" in item:
                    name, _, text = item.strip().partition(":")
                    out.append(f"- `{name.strip()}`: {rst_inline(text.strip())}")
                elif item.strip():
                    out[-1] += " " + rst_inline(item.strip())
                i += 1
            out.append("")
            continue
        elif line.lstrip().startswith(">>>"):
            block = []
            indent = len(line) - len(line.lstrip())
            while i < len(lines) and lines[i].strip():
                block.append(lines[i][indent:])
                i += 1
            out += ["", "```pycon", *block, "```", ""]
            continue
        elif line.rstrip().endswith("::") and i + 1 < len(lines) and not lines[i + 1].strip():
            # an RST literal block: the indented lines after "::"
            out += [rst_inline(line.rstrip()[:-1]), "", "```text"]
            i += 2
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith("    ")):
                out.append(lines[i][4:])
                i += 1
            while out[-1] == "":
                out.pop()
            out += ["```", ""]
            continue
        else:
            # an indented line would be a Markdown code block: docstring continuations are prose
            out.append(rst_inline(line.strip() if line.startswith("    ") else line))
        i += 1
    return "\n".join(out).strip() + "\n"


# --- env ids -------------------------------------------------------------------------------------------------


def env_specs() -> list[Any]:
    """Every registered id, as ``agentrl list`` prints them (:func:`agentrl.core.registry.registered_envs`)."""
    import agentrl  # noqa: F401  (registers the ids)
    from agentrl.core.registry import registered_envs

    return list(registered_envs())


def env_page_path(env_id: str) -> str:
    """``AgentRL/TIRMath-v0`` -> ``envs/AgentRL/TIRMath-v0.md``."""
    return f"envs/{env_id}.md"


def is_pixel_env(spec: Any) -> bool:
    """An env whose observations hold pixels (its page shows a picture of its first one)."""
    return "pixels" in spec.tags or spec.group in ("FlashGame", "OSWorld")


def snippet(env_id: str, pixels: bool) -> str:
    """A runnable ``gym.make`` episode of the id, played by its oracle for a few turns."""
    shape = "observation.shape" if pixels else "observation[:300]"
    if "OSWorld" in env_id:
        shape = 'observation["screenshot"].shape, observation["instruction"]'
    elif "ColourLetter" in env_id:
        shape = 'observation["pixels"].shape, observation["text"]'
    return textwrap.dedent(
        f"""\
        import gymnasium as gym
        import agentrl  # registers the AgentRL/* ids

        env = gym.make("{env_id}")
        observation, info = env.reset(seed=0)
        print({shape})
        for _ in range(5):
            action = env.unwrapped.oracle_action()  # the privileged expert; your agent's action goes here
            observation, reward, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                break
        print(reward, info["turn"], info["done_reason"])
        env.close()
        """
    )


def run_snippet(env_id: str, code: str) -> None:
    """Run a page's snippet here, in the build: a snippet that fails fails the build."""
    import warnings

    try:
        with _quiet(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(code, f"<snippet of {env_id}>", "exec"), {"__name__": "__snippet__"})
    except Exception as exc:  # any failure is the page's
        raise DocsBuildError(f"the snippet of {env_id} failed: {type(exc).__name__}: {exc}") from exc


class _quiet:
    """Swallow a snippet's prints (they are for the reader's terminal)."""

    def __enter__(self) -> None:
        import contextlib

        self._stack = contextlib.ExitStack()
        self._stack.enter_context(contextlib.redirect_stdout(io.StringIO()))

    def __exit__(self, *exc: object) -> None:
        self._stack.close()


def _entry_doc(spec: Any, unwrapped: Any) -> tuple[str, str]:
    """The env class's docstring, and what its game adds (a game's spec, a seat's rules module)."""
    doc = inspect.getdoc(type(unwrapped)) or ""
    extra = ""
    game = getattr(unwrapped, "spec_game", None)
    if game is not None:
        extra = f"**{game.title}**: {game.description}"
    name = spec.kwargs.get("name") if spec.group == "multiagent" else None
    if name:
        module = importlib.import_module(f"agentrl.envs.multiagent.{name.rsplit('_v', 1)[0]}")
        extra = inspect.getdoc(module) or ""
    return doc, extra


def observe(spec: Any, frames: int = 0) -> EnvFacts:
    """Make the env, reset it with seed 0, play its oracle ``frames`` steps (at least one) and say what it saw."""
    import warnings

    import gymnasium as gym

    with warnings.catch_warnings():  # a deprecated id warns on make: its page says so
        warnings.simplefilter("ignore")
        env = gym.make(spec.env_id)
    try:
        observation, info = env.reset(seed=0)
        keys = set(info)
        shots = [observation]
        for _ in range(max(frames, 1)):
            observation, _, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
            keys |= set(info)
            shots.append(observation)
            if terminated or truncated:
                break
        doc, extra = _entry_doc(spec, env.unwrapped)
        return EnvFacts(
            observation_space=str(env.observation_space),
            action_space=str(env.action_space),
            first_observation=shots[0],
            info_keys=sorted(keys),
            deprecated_info=dict(getattr(env.unwrapped, "deprecated_info", {}) or {}),
            doc=doc,
            extra_doc=extra,
            frames=shots if frames else [],
        )
    except DocsBuildError:
        raise
    except Exception as exc:
        raise DocsBuildError(
            f"{spec.env_id} could not be observed for its page: {type(exc).__name__}: {exc}. The pixel envs need "
            "Chromium and Xvfb: `make setup` installs them as root; `python3 agentrl/_system_deps.py check` "
            "prints what is missing and the command that installs it"
        ) from exc
    finally:
        env.close()


def pixels_of(observation: Any) -> Any:
    """The image in an observation (a pixel array, the desktop's ``screenshot``, a pixel-text ``pixels``)."""
    import numpy as np

    if isinstance(observation, dict):
        for key in ("screenshot", "pixels"):
            if key in observation:
                observation = observation[key]
                break
    array = np.asarray(observation)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
        raise DocsBuildError(f"expected an (H, W, 3) uint8 image, got {array.dtype} {array.shape}")
    return array


def _image(array: Any, width: int) -> Any:
    """A PIL image scaled to ``width`` (nearest for small observations: the pixels the agent sees, enlarged)."""
    from PIL import Image

    image = Image.fromarray(array)
    scale = width / image.width
    resample = Image.Resampling.NEAREST if scale >= 1 else Image.Resampling.LANCZOS
    return image.resize((width, round(image.height * scale)), resample)


def png_bytes(array: Any, width: int) -> bytes:
    """The image as a PNG, ``width`` pixels wide."""
    buffer = io.BytesIO()
    _image(array, width).save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def gif_bytes(arrays: list[Any], width: int, ms: int = 250) -> bytes:
    """The frames as an animated GIF that loops, ``ms`` milliseconds a frame."""
    images = [_image(a, width).convert("P", palette=1, colors=128) for a in arrays]
    buffer = io.BytesIO()
    images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:], duration=ms, loop=0)
    return buffer.getvalue()


def _text_block(observation: Any, limit: int = 1500) -> str:
    text = observation if isinstance(observation, str) else json.dumps(observation, default=str)[:limit]
    if len(text) > limit:
        text = text[:limit] + f"\n... ({len(text) - limit} more characters)"
    return "```text\n" + text.replace("```", "'''") + "\n```"


def use_it(code: str, note: str) -> list[str]:
    """The "Use it" section of a page: its snippet and what the build does with it."""
    return ["## Use it", "", "```python", code.rstrip(), "```", "", note, ""]


def env_pages(spec: Any) -> Iterator[Page]:
    """The page of one id and its pictures."""
    from agentrl.core.episode import INFO_KEYS

    pixels = is_pixel_env(spec)
    animated = spec.group in ("FlashGame", "OSWorld")
    code = snippet(spec.env_id, pixels)
    run_snippet(spec.env_id, code)
    facts = observe(spec, frames=GIF_STEPS if animated else 0)
    name = spec.env_id.rsplit("/", 1)[-1]
    lines = [f"# {spec.env_id}", ""]
    if spec.deprecated:
        lines += ['!!! warning "Deprecated"', f"    {rst_inline(spec.deprecated)}", ""]
    lines += [rst_inline(spec.description), ""]
    if pixels:
        array = pixels_of(facts.first_observation)
        width = min(max(array.shape[1], 336), 960)
        yield Page(f"envs/img/{name}.png", png_bytes(array, width))
        lines += [
            f"![The first observation of {spec.env_id}](../img/{name}.png)",
            "",
            f"*The first observation after `reset(seed=0)`, {array.shape[1]}x{array.shape[0]} pixels"
            + (f", shown at {width}px wide." if width != array.shape[1] else ".")
            + "*",
            "",
        ]
        if animated:
            yield Page(f"envs/img/{name}.gif", gif_bytes([pixels_of(f) for f in facts.frames], min(width, 480)))
            lines += [
                f"![The oracle playing {spec.env_id}](../img/{name}.gif)",
                "",
                f"*The oracle (`env.unwrapped.oracle_action()`) playing its first {len(facts.frames) - 1} steps.*",
                "",
            ]
    kwargs = ", ".join(f"`{k}={v!r}`" for k, v in spec.kwargs.items()) or "none"
    lines += [
        "| | |",
        "|---|---|",
        f"| Id | `{spec.env_id}` |",
        f"| Entry point | `{spec.entry_point}` |",
        f"| Registered kwargs | {kwargs} |",
        f"| Group (`agentrl list`) | {spec.group} |",
        f"| Tags | {', '.join(spec.tags) or 'none'} |",
        f"| In the bench suites | {'yes' if spec.benchmark else 'no'} |",
        f"| Observation space | `{facts.observation_space}` |",
        f"| Action space | `{facts.action_space}` |",
        "",
        *use_it(code, "The build of this site runs this snippet; a snippet that fails fails the build."),
    ]
    if not pixels:
        lines += ["## First observation", "", "After `reset(seed=0)`:", "", _text_block(facts.first_observation), ""]
    contract = [k for k in facts.info_keys if k in INFO_KEYS]
    own = [k for k in facts.info_keys if k not in INFO_KEYS and k not in facts.deprecated_info]
    lines += [
        "## The info keys",
        "",
        "Seen in `info` after `reset(seed=0)` and the oracle's steps "
        "([the episode contract](../../design/contract.md)):",
        "",
        "- the contract's: " + ", ".join(f"`{k}`" for k in contract),
    ]
    if own:
        lines.append("- this env's own: " + ", ".join(f"`{k}`" for k in own))
    for key, why in facts.deprecated_info.items():
        lines.append(f"- `{key}`, deprecated: {rst_inline(why)}")
    lines += ["", "## About", ""]
    if facts.extra_doc:
        lines += [docstring_markdown(facts.extra_doc), ""]
    lines += [docstring_markdown(facts.doc), ""]
    yield Page(env_page_path(spec.env_id), "\n".join(lines))


def multiagent_pages() -> Iterator[Page]:
    """One page per PettingZoo module of :data:`agentrl.envs.multiagent.MULTIAGENT_ENVS`."""
    from agentrl.envs.multiagent import MULTIAGENT_ENVS, load

    for name, (kind, description) in sorted(MULTIAGENT_ENVS.items()):
        module = load(name)
        env = module.env()
        try:
            env.reset(seed=0)
            agents = list(env.possible_agents)
            spaces = [f"| `{a}` | `{env.observation_space(a)}` | `{env.action_space(a)}` |" for a in agents]
        finally:
            env.close()
        parallel = "parallel_env" in dir(module)
        code = textwrap.dedent(
            f"""\
            from agentrl.envs.multiagent import load

            env = load("{name}").env()  # PettingZoo AEC
            env.reset(seed=0)
            for agent in env.agent_iter(max_iter=6):
                observation, reward, termination, truncation, info = env.last()
                action = None if termination or truncation else env.action_space(agent).sample()
                env.step(action)
            env.close()
            """
        )
        run_snippet(name, code)
        lines = [
            f"# {name}",
            "",
            f"{rst_inline(description)}. Native form: **{kind}**"
            + (" (`parallel_env()` too)." if parallel else "."),
            "",
            "| Agent | Observation space | Action space |",
            "|---|---|---|",
            *spaces,
            "",
            *use_it(code, f"The build runs this snippet. `agentrl league --env {name}` plays a league on it."),
            "## About",
            "",
            docstring_markdown(inspect.getdoc(module) or ""),
        ]
        yield Page(f"multiagent/{name}.md", "\n".join(lines))


def index_page(specs: list[Any]) -> Page:
    """The table of every id, grouped as ``agentrl list`` groups them."""
    from agentrl.envs.multiagent import MULTIAGENT_ENVS

    groups: dict[str, list[Any]] = {}
    for spec in specs:
        groups.setdefault(spec.group, []).append(spec)
    order = sorted(groups, key=lambda g: (not any(s.benchmark for s in groups[g]), g.lower()))
    lines = [
        "# Environments",
        "",
        f"Every id that `agentrl list` prints ({len(specs)} ids), each with its page, generated from the code.",
        "",
    ]
    for group in order:
        lines += [f"## {group}", "", "| Id | What it is |", "|---|---|"]
        for spec in groups[group]:
            text = f"*deprecated:* {spec.deprecated}" if spec.deprecated else spec.description
            link = env_page_path(spec.env_id).removeprefix("envs/")
            lines.append(f"| [`{spec.env_id}`]({link}) | {rst_inline(text).replace('|', '/')} |")
        lines.append("")
    lines += ["## Multi-agent (PettingZoo)", "", "| Module | Form | What it is |", "|---|---|---|"]
    for name, (kind, description) in sorted(MULTIAGENT_ENVS.items()):
        lines.append(f"| [`{name}`](../multiagent/{name}.md) | {kind} | {rst_inline(description)} |")
    return Page("envs/index.md", "\n".join(lines) + "\n")


# --- recorded results ----------------------------------------------------------------------------------------


def _figures(data: Any, prefix: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    """The scalar figures of a result file (nested keys joined with dots; long lists left out)."""
    if isinstance(data, dict) and depth < 3:
        for key, value in data.items():
            if key == "command":
                continue
            yield from _figures(value, f"{prefix}{key}.", depth + 1)
    elif isinstance(data, (int, float, str, bool)) and len(str(data)) < 120:
        yield prefix.rstrip("."), data


def reproduce_page() -> Page:
    """Each recorded result: the command that made it, then its figures, read from the file."""
    lines = [
        "# Reproduce our figures",
        "",
        "Each benchmark writes its result file into `benchmarks/results/`; this page reads them. Run the",
        "command from the repository root (after `make setup`) to measure it again on your machine: absolute",
        "times differ between machines, ratios measured in one run less so.",
        "",
    ]
    for path in sorted(RESULTS.glob("*.json")):
        data = json.loads(path.read_text())
        command = data.get("command") if isinstance(data, dict) else None
        if not command:
            raise DocsBuildError(f"{path.relative_to(ROOT)} records no 'command': say how it was made")
        lines += [f"## `{path.name}`", "", "```bash", command, "```", ""]
        figures = list(_figures(data))[:40]
        lines += ["| Figure | Value |", "|---|---|"]
        lines += [f"| `{key}` | {str(value).replace('|', '/')} |" for key, value in figures]
        lines.append("")
        plot = path.with_suffix(".png")
        if plot.exists():
            lines += [f"![{path.stem}](img/{plot.name})", ""]
    for plot in sorted(RESULTS.glob("*.png")):
        if not plot.with_suffix(".json").exists():
            lines += [f"## `{plot.name}`", "", f"![{plot.stem}](img/{plot.name})", ""]
    return Page("reproduce.md", "\n".join(lines))


def result_images() -> Iterator[Page]:
    """The recorded plots of ``benchmarks/results/``, for the pages that embed them."""
    for plot in sorted(RESULTS.glob("*.png")):
        yield Page(f"img/{plot.name}", plot.read_bytes())


# --- reward-hack probes ------------------------------------------------------------------------------------------

REDTEAM = RESULTS / "redteam.json"

_REDTEAM_INTRO = """\
# Reward-hack probes

A benchmark whose agent can read the gold answer or trick its grader measures nothing. `agentrl redteam` runs
scripted, model-free exploit policies (*probes*) against every env and sets each probe's mean reward against
the env's **random floor**: the random agent of `agentrl bench --agent random`, on the same seeds, so probe
episode *i* and floor episode *i* play the same task. A probe acts through `env.step` as an agent would: it
sees the observation, `info` and the env's public parts (its spaces, its final-answer format), never the task,
the oracle or the game state.

**Verdicts.** With `d_i` = probe return minus floor return on episode *i*, a probe is **ABOVE FLOOR** when the
one-sided 95% lower confidence bound of the mean of `d` (Student's t, paired by task) is above 0: a probe that
wins every episode is caught even with two, one lucky guess in four or eight is not. **ACCESS**: the probe
reached something it must not (the gold from inside a sandbox, an `ATTACH` that ran, the desktop server's
routes), rewarded or not. **CRASH**: an action made `reset`/`step` raise (a wrongly typed action's
`InvalidActionType` is the documented refusal, not a crash) or ended the episode with `env_error`.
**accepted**: above the floor by the task's nature, with the reason below. ABOVE FLOOR, ACCESS and CRASH are
findings: `agentrl redteam` exits with status 1 on any.

```bash
agentrl redteam AgentRL/SQL-v0                 # one env (add --episodes N, --seed S, --env-kwarg KEY=VALUE)
agentrl redteam --all --json benchmarks/results/redteam.json   # every id: the run this page shows
agentrl redteam --list-probes                  # every probe, what it tries, what it is aimed at
```

The probes live in `agentrl/bench/redteam/` (`text.py`: the text envs; `world.py`: the games and the desktop;
`seats.py`: the multi-agent games); `tests/security/test_redteam*.py` runs them on every env and fails naming
any finding, and on a toy env whose grader is deliberately hackable, where the flood probe must come out
ABOVE FLOOR.

"""


#: what the probes found and what was done: (env, probe, found, done)
REDTEAM_FIXES = (
    ("`AgentRL/PatientConsult-v0`", "`plan-stuffing`",
     "a plan naming every treatment of the condition catalog (no diagnosis, no history) met every plan criterion: "
     "0.18 against the floor's 0",
     "fixed in **v1**: a conclusion naming 8+ treatment ideas of other conditions meets no plan criterion (a "
     "verbose honest plan names up to 5); `tests/security/test_grader_consult.py`"),
    ("`AgentRL/PatientConsult-v0`, `grader=\"llm\"`", "`inject-judge`",
     "a fake `SYSTEM:` turn, rubric lines and a JSON verdict in the doctor's reply took a SmolLM2 judge from 0 "
     "to 0.54",
     "fixed in **v1**: the judge prompt `consult-judge-v2` quotes the conversation as data and breaks its "
     "protocol word there (0 again; `redteam_llm_judge.json` below); `tests/security/test_grader_consult.py`"),
    ("`AgentRL/TIRMath-v0`, `isolation=\"process\"`", "`sandbox-snoop`",
     "without bubblewrap the Python sandbox (as root) hides `/root`, `/home` and the temp folders only: a GSM8K "
     "file elsewhere (the checkout's `tests/fixtures/`) was read, and every answer was right (ACCESS)",
     "the default `isolation=\"auto\"` uses bubblewrap (a minimal read-only root: nothing found); the process "
     "tier's limits are stated in the threat model (design/security.md) and in `sandbox.isolation`"),
    ("`AgentRL/OSWorld-v0`, installed from a wheel", "`task-file-hunt`",
     "the desktop's actions can read the server's `site-packages`: installed as a wheel (not `-e`), the shipped "
     "tasks' JSON is there, oracle included; the probe found the task, replayed its oracle and scored 0.5 against "
     "the floor's 0 (ACCESS; `redteam_wheel_install.json` below, recorded before the fix)",
     "fixed: the desktop's jail mounts an empty folder over the `agentrl` package wherever it is installed, and "
     "the desktop image is built without the task files; `tests/security/test_desktop_package_hidden.py` installs "
     "a wheel and looks from inside the jail"),
    ("`AgentRL/Search-v0`", "`copy-first-title`, `question-option`",
     "answers copied from the passages or from a comparison question's two options score some episodes",
     "accepted: the task's nature (below)"),
)


def _redteam_fixes() -> list[str]:
    lines = ["## What the probes found, and what was done", "", "| Env | Probe | Found | Done |", "|---|---|---|---|"]
    lines += [f"| {env} | {probe} | {found} | {done} |" for env, probe, found, done in REDTEAM_FIXES]
    return [*lines, "", "PatientConsult-v0 stays registered one release, deprecated, with its old grading.", ""]


def _redteam_cell(value: Any) -> str:
    return "" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value).replace("|", "/")


def _redteam_run(data: dict[str, Any], title: str, level: str = "##") -> list[str]:
    """One recorded ``agentrl redteam`` run: its command, its findings, what is accepted and why, a table per env."""
    envs = data.get("envs", [])
    lines = [
        f"{level} {title}",
        "",
        "```bash",
        str(data.get("command", "")),
        "```",
        "",
        f"agentrl {data.get('agentrl_version', '?')}, seed {data.get('seed', 0)}: "
        f"{data.get('probe_runs', 0)} probe runs on {len(envs)} targets in {data.get('wall_s', 0):.0f} s "
        f"(on a 2-core machine). Findings: {data.get('findings_count', 0)}.",
        "",
    ]
    findings = data.get("findings") or []
    lines += [f"- {finding}" for finding in findings] + ([""] if findings else [])
    accepted = {p["name"]: p["accepted"] for p in data.get("probes", []) if p.get("accepted")}
    rows = [(env["target"], row) for env in envs for row in env.get("rows", []) if row.get("verdict") == "accepted"]
    if rows:
        lines += [f"{level}# Accepted: above the floor by the task's nature", ""]
        lines += [f"- `{target}` **{row['probe']}** (mean {row['mean']:.3f} against {row['floor']:.3f}): "
                  f"{accepted.get(row['probe'], '')}" for target, row in rows]
        lines.append("")
    lines += ["Columns: the probe's mean return, the random floor's on the same seeds, the one-sided 95% lower "
              "bound of their mean paired difference (`Δ low`), the verdict.", ""]
    for env in envs:
        steps = f", at most {env['max_steps']} steps" if env.get("max_steps") else ""
        kwargs = f"; `{json.dumps(env['env_kwargs'])}`" if env.get("env_kwargs") else ""
        lines += [f"{level}# `{env['target']}`", "",
                  f"{env.get('episodes')} episodes per probe{steps}{kwargs}; {env.get('wall_s', 0):.0f} s.", ""]
        if env.get("skipped"):
            lines += [f"Skipped: {env['skipped']}", ""]
            continue
        for floor in env.get("floors", []):
            config = f" (`{json.dumps(floor['config'])}`)" if floor.get("config") else ""
            lines.append(f"- Random floor{config}: {floor['mean']:.3f}")
        lines += ["", "| Probe | What it tries | Episodes | Mean | Floor | Δ low | Verdict |",
                  "|---|---|---|---|---|---|---|"]
        notes: list[str] = []
        for row in env.get("rows", []):
            verdict = row["verdict"] if row["verdict"] in ("ok", "accepted") else f"**{row['verdict']}**"
            lines.append("| " + " | ".join(_redteam_cell(v) for v in (
                f"`{row['probe']}`", row["description"], row["episodes"], row["mean"], row["floor"],
                row["delta_low"], verdict)) + " |")
            evidence = (row.get("findings") or []) + (row.get("errors") or []) + (row.get("notes") or [])
            if evidence:
                notes.append(f"- `{row['probe']}`: " + "; ".join(_redteam_cell(e) for e in evidence[:3]))
        lines.append("")
        if notes:
            lines += ["Evidence (what the env answered):", "", *notes, ""]
    return lines


def redteam_page() -> Page:
    """The probes' tables, one per env, read from ``benchmarks/results/redteam*.json`` (never run at build time).

    ``redteam.json`` is the run over every id; any other ``redteam_<name>.json`` (a run in another configuration,
    such as an LLM judge) follows it.
    """
    lines = [_REDTEAM_INTRO, *_redteam_fixes()]
    if not REDTEAM.exists():
        lines += ["No recorded run yet: `agentrl redteam --all --json benchmarks/results/redteam.json` makes one.", ""]
    else:
        lines += _redteam_run(json.loads(REDTEAM.read_text()), "The recorded run over every id")
    for path in sorted(RESULTS.glob("redteam_*.json")):
        lines += _redteam_run(json.loads(path.read_text()), f"Another run: `{path.name}`")
    return Page("design/redteam.md", "\n".join(lines))


def home_page(specs: list[Any]) -> Page:
    """The site's home: the README, its links into ``docs/`` made site links and its ids linked to their pages."""
    text = (ROOT / "README.md").read_text().replace("](docs/", "](")
    for spec in specs:
        link = env_page_path(spec.env_id)
        text = text.replace(f"| `{spec.env_id}` |", f"| [`{spec.env_id}`]({link}) |")
    text = text.replace("| `AgentRL/FlashGame-*-v0`", "| [`AgentRL/FlashGame-*-v0`](envs/index.md#flashgame)")
    seats = "`AgentRL-MA/<game>-vs-<opponent>-v1`"
    text = text.replace(f"| {seats}", f"| [{seats}](envs/index.md#multiagent)")
    return Page("index.md", text)


def all_pages() -> Iterator[Page]:
    """Every generated page and picture."""
    specs = env_specs()
    yield home_page(specs)
    yield index_page(specs)
    for spec in specs:
        yield from env_pages(spec)
    yield from multiagent_pages()
    yield reproduce_page()
    yield redteam_page()
    yield from result_images()


# --- MkDocs hooks --------------------------------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    """Add the generated pages to the site's files."""
    from mkdocs.structure.files import File

    for page in all_pages():
        files.append(File.generated(config, page.path, content=page.content))
    return files


_HTML_ROLE = re.compile(r":(?:class|func|meth|data|attr|mod|exc|obj):<code>(~?)([^<]*)</code>")


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """Sphinx roles in the API pages' docstrings (``:func:`x```, rendered as ``:func:<code>x</code>``) as code."""
    return _HTML_ROLE.sub(lambda m: f"<code>{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}</code>", html)
