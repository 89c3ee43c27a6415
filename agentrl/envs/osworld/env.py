"""``AgentRL/OSWorld-v0``: a real Linux desktop as a Gymnasium env, with OSWorld's tasks and evaluators.

Each env owns one desktop (its own Xvfb display, xfwm4, private HOME, real Debian apps) and always
talks to it through the desktop HTTP server (:mod:`agentrl.envs.osworld.server`): locally the server
runs in a thread beside Xvfb on 127.0.0.1 (``provider="local"``); ``provider="remote"`` points the
same code at a server elsewhere (``agentrl serve-desktop`` in a VM or container, or OSWorld's own VM
server). One code path serves a laptop and a fleet.

An episode: ``reset`` kills what the last episode left, restores HOME, runs the task's setup steps
and returns the first observation (files that ``download`` steps and ``cloud_file`` getters name come
from the offline asset cache that ``agentrl osworld fetch-assets`` fills; a task whose files are not
there fails its reset with :class:`~agentrl.envs.osworld.tasks.assets.MissingAsset`, naming the URL and that
command). Each ``step`` runs one action (pyautogui code in a sandboxed
child bound to that display, or one computer_13 action), waits until the screen holds still (unchanged,
and the desktop's apps idle, for ``quiet_s``; at most ``settle_s``) and observes. ``DONE``,
``FAIL`` or the step budget (15 by default, as OSWorld; 50 and 100 are its other settings) ends the
episode, and only then is the task's evaluator run: the reward is its score in ``[0, 1]``, with
``info["eval_details"]`` per metric.

Observations (``obs_type``, as OSWorld): a ``Dict`` with ``instruction`` and, by type,
``screenshot`` (``Box(H, W, 3, uint8)``), ``accessibility_tree`` (the linearized AT-SPI tree,
trimmed to ``a11y_max_tokens``) or, for ``som``, the screenshot with numbered boxes and the table
of marks. Actions (``action_space``): ``"pyautogui"`` (Python code as text) or ``"computer_13"``
(a ``Dict`` space; the JSON text form is accepted too), plus ``WAIT``, ``DONE`` and ``FAIL``.

The env is on the episode contract (:class:`~agentrl.core.episode.EpisodeEnv`): the desktop client is
its sandbox and :func:`~agentrl.envs.osworld.tasks.evaluate.evaluate` its verifier (the score-at-end hook).

``info``: the contract's keys, ``task_id``, ``turn``, ``turns_left``, ``action_error`` (the action's
parse error or traceback, else ``None``), ``tool_error`` (the traceback of an action that ran and
failed, or the desktop's failure, else ``None``), ``void_turn``, ``done_reason`` (``"done"``,
``"fail"``, ``"max_steps"``, ``"env_error"``), ``reward_components`` (``{"evaluator": score}`` at the
end); the desktop's own, ``parsed_action`` and at the end ``eval_details``; and ``step`` and
``steps_left``, deprecated aliases of ``turn`` and ``turns_left`` (kept for one release, gone in v1).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shlex
import time
import urllib.error
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from agentrl.core.choices import did_you_mean
from agentrl.core.dataset import DatasetCard
from agentrl.core.episode import EpisodeEnv, Turn
from agentrl.core.errors import ResetNeeded, UnknownTask
from agentrl.core.spaces import UnicodeText
from agentrl.core.verify import Score
from agentrl.envs.osworld.actions import (
    Action,
    ActionError,
    computer13_space,
    from_space_sample,
    parse_computer13,
    parse_pyautogui,
)
from agentrl.envs.osworld.runtime.settle import ANSWER_S
from agentrl.envs.osworld.tasks.assets import AssetStore, MissingAsset, cloud_file, missing_assets
from agentrl.envs.osworld.tasks.evaluate import evaluate
from agentrl.envs.osworld.tasks.format import OSWorldTask, load_task_dir
from agentrl.envs.osworld.tasks.pool import SkippedTask, TaskPool, pool_of, read_tasks
from agentrl.envs.osworld.tasks.real_oracles import real_oracle
from agentrl.envs.osworld.tasks.setup import run_setup

__all__ = ["ACTION_SPACES", "BUILTIN_TASKS", "OBS_TYPES", "PROVIDERS", "OSWorldEnv", "builtin_tasks"]

OBS_TYPES = ("screenshot", "a11y_tree", "screenshot_a11y_tree", "som")
ACTION_SPACES = ("pyautogui", "computer_13")
PROVIDERS = ("local", "remote", "docker")
BUILTIN_TASKS = Path(__file__).parent / "tasks" / "data"
MAX_CODE_CHARS = 64 * 1024
MAX_TREE_CHARS = 400_000


def builtin_tasks(*, installed: Sequence[str] | None = None) -> list[OSWorldTask]:
    """The shipped tasks whose ``related_apps`` are all in ``installed`` (default: the apps installed here).

    >>> len(builtin_tasks(installed=["xterm", "mousepad", "thunar", "galculator", "chromium"])) >= 40
    True
    """
    from agentrl.envs.osworld.runtime.apps import installed_apps

    have = set(installed_apps() if installed is None else installed)
    return [task for task in load_task_dir(BUILTIN_TASKS) if all(app in have for app in task.related_apps)]


class OSWorldEnv(EpisodeEnv[dict[str, Any], Any]):
    """A desktop task from OSWorld's JSON format, on a real X desktop.

    ## Description

    One real Linux desktop per env (its own Xvfb display, xfwm4, a private HOME, Debian's xterm, mousepad,
    thunar, galculator and Chromium; LibreOffice and more with ``make desktop-full``), always reached
    through the desktop HTTP server, locally or remote. A task is OSWorld's JSON: an instruction, setup
    steps (files, commands, apps to open) and an evaluator (getters and metrics). The shipped tasks, or
    OSWorld's own ``evaluation_examples`` folder.

    ## Action Space

    ``action_space="pyautogui"``: Python code using ``pyautogui`` as a str, run in a sandboxed child bound
    to the display; ``"computer_13"``: OSWorld's 13 action types as a ``Dict`` (or its JSON text). Both
    accept ``WAIT``, ``DONE`` and ``FAIL``.

    ## Observation Space

    A ``Dict`` with ``instruction`` and, by ``obs_type``: ``screenshot`` (``Box(0, 255, (H, W, 3), uint8)``,
    ``screen_size``), ``accessibility_tree`` (the linearized AT-SPI tree, trimmed to ``a11y_max_tokens``),
    both, or for ``"som"`` the screenshot with numbered boxes and the table of marks. An observation is taken
    once the desktop holds still after the action (the screen unchanged and its apps idle for ``quiet_s``, at
    most ``settle_s``), not after a fixed pause.

    ## Rewards

    0 on every step; when the episode ends, the task's evaluator runs and its score in ``[0, 1]`` is the
    reward (``info["eval_details"]`` per metric, ``reward_components={"evaluator": score}``).

    ## Starting State

    ``reset`` kills what the last episode left, restores HOME and runs the task's setup steps; the task is
    ``task_id``, ``options={"task_id": ...}``, or drawn from the pool with the reset's seed.

    ## Episode End

    Terminated by ``DONE`` (``done_reason="done"``), ``FAIL`` (``"fail"``) or a desktop failure
    (``"env_error"``); truncated by the step budget (``"max_steps"``; 15 by default, as OSWorld).

    ## Version History

    v0: initial release; since issue 19 on the episode contract, with ``turn``, ``turns_left``,
    ``tool_error``, ``void_turn`` and ``reward_components`` added to ``info`` and ``step``/``steps_left``
    deprecated (same values; removed in v1).

    Args:
        tasks: the task pool: :class:`OSWorldTask` objects, or a path: a folder of OSWorld task JSON
            files, a task list (``evaluation_examples/test_all.json``, or the ``evaluation_examples``
            folder itself) or one task file; default the shipped tasks whose apps are installed. Tasks
            are read file by file (:func:`~agentrl.envs.osworld.tasks.pool.read_tasks`); those that cannot be
            parsed or use a setup step, getter, metric or app this desktop lacks are left out, listed in
            ``env.unwrapped.skipped_tasks`` with their reasons and summarised in one warning. No task
            left raises :class:`~agentrl.envs.osworld.tasks.pool.EmptyTaskPool` naming the top reasons
            (``agentrl osworld coverage PATH`` prints the table).
        split: with ``tasks`` an OSWorld ``evaluation_examples`` folder: the task list to load,
            ``tasks/<split>.json`` (``"test_all"``, ``"test_small"``...), in its order, the tasks read from
            ``tasks/examples/<domain>/<id>.json``. The env is a :class:`~agentrl.core.dataset.TaskDataset`
            (``task_ids()``, ``dataset_card()``): ``agentrl bench --all-tasks`` sweeps its tasks, scored by
            success rate.
        task_id: always run this task (else ``reset`` picks one with its seed, or
            ``options={"task_id": ...}``).
        obs_type: ``"screenshot"`` (default), ``"a11y_tree"``, ``"screenshot_a11y_tree"`` or ``"som"``.
        action_space: ``"pyautogui"`` (default) or ``"computer_13"``.
        screen_size: ``(width, height)``, default ``(1280, 720)``; ``(1920, 1080)`` is OSWorld's.
        max_steps: the step budget (OSWorld runs 15, 50 or 100).
        provider: ``"local"`` (a desktop on this machine), ``"remote"`` (``server_url``) or ``"docker"``.
        server_url, token: the remote desktop server and its bearer token.
        settle_s: after an action (and a reset), wait until the screen is unchanged and the desktop's apps
            are idle for ``quiet_s``, at most ``settle_s`` seconds, then observe (``POST /settle``,
            :mod:`~agentrl.envs.osworld.runtime.settle`); 0 turns it off.
        quiet_s: how long the screen and the apps must hold still.
        answer_s: how long they must hold still while the screen is still the one from before the action:
            an app may answer late with its CPU idle meanwhile (LibreOffice Calc paints a key's effect
            about 0.1 s after it). An action that changes nothing on the screen costs this much.
        pause_s: a fixed pause after an action, before the settle. ``None`` (default): none where the desktop
            settles, 0.1 s on a server that cannot (OSWorld's own VM server).
        wait_s: seconds a ``WAIT`` action waits.
        action_timeout_s: the deadline of one action's code.
        a11y_max_tokens: the budget the linearized tree is trimmed to.
        render_mode: ``"rgb_array"`` returns the last screenshot.

    The oracle (the contract's convention): ``oracle_action()`` replays the task's ``"oracle"``
    actions step by step; for OSWorld's own tasks, which carry none, the scripted solutions of
    :mod:`~agentrl.envs.osworld.tasks.real_oracles` (by task id).

    >>> import gymnasium as gym, agentrl
    >>> env = gym.make("AgentRL/OSWorld-v0", task_id="os-echo-hello")  # doctest: +SKIP
    >>> obs, info = env.reset(seed=0)  # doctest: +SKIP
    >>> obs["screenshot"].shape, info["task_id"]  # doctest: +SKIP
    ((720, 1280, 3), 'os-echo-hello')
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}
    episode_kind = "desktop"  # check_domain runs its desktop checks
    budget_done_reason = "max_steps"
    deprecated_info = {"step": "use info['turn'] (same value); removed in v1",
                       "steps_left": "use info['turns_left'] (same value); removed in v1"}

    def __init__(
        self,
        tasks: Sequence[OSWorldTask] | str | Path | None = None,
        *,
        split: str | None = None,
        task_id: str | None = None,
        obs_type: str = "screenshot",
        action_space: str = "pyautogui",
        screen_size: tuple[int, int] | None = None,
        max_steps: int = 15,
        provider: str = "local",
        server_url: str | None = None,
        token: str | None = None,
        settle_s: float = 1.0,
        quiet_s: float = 0.02,
        answer_s: float = ANSWER_S,
        pause_s: float | None = None,
        wait_s: float = 1.0,
        action_timeout_s: float = 10.0,
        a11y_max_tokens: int = 10_000,
        render_mode: str | None = None,
        docker_image: str | None = None,
    ) -> None:
        for name, value, choices in (
            ("obs_type", obs_type, OBS_TYPES),
            ("action_space", action_space, ACTION_SPACES),
            ("provider", provider, PROVIDERS),
        ):
            if value not in choices:
                raise ValueError(f"{name} must be one of {choices}, got {value!r}{did_you_mean(str(value), choices)}")
        if int(max_steps) < 1:
            raise ValueError(f"max_steps must be a positive int, got {max_steps!r}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        super().__init__(max_turns=int(max_steps))
        self._dataset_path: Path | None = None
        pool: TaskPool | None = None
        if split is not None and not isinstance(tasks, (str, Path)):
            raise ValueError(f"split={split!r} needs tasks= an OSWorld evaluation_examples folder "
                             "(with <split>.json and examples/<domain>/<id>.json)")
        if isinstance(tasks, (str, Path)):  # file by file: what cannot run here is reported, not fatal
            pool = read_tasks(tasks, split=split)
            split = pool.split
            self._dataset_path = Path(tasks).resolve()
            if split is not None and self._dataset_path.is_dir():
                self._dataset_path = self._dataset_path / f"{split}.json"
        elif tasks is None:
            self._dataset_path = BUILTIN_TASKS.resolve()
        else:
            if not list(tasks):
                raise ValueError("no tasks: give tasks=[...] or a folder of OSWorld task JSON files")
            pool = pool_of(tasks)
        if pool is not None:  # setup steps, getters, metrics: checked before a desktop starts
            pool = pool.select(installed=None)
            pool.require_tasks()
        self.split = split
        self.tasks: list[OSWorldTask] = list(pool.tasks) if pool is not None else []
        self.skipped_tasks: list[SkippedTask] = []
        """The tasks left out of the pool (they cannot run on this desktop), each with its reasons."""
        self._builtin = pool is None
        self.assets = AssetStore(source=pool.source if pool is not None and pool.source else None)
        """Where ``download`` steps and ``cloud_file`` getters read their files (``agentrl osworld fetch-assets``)."""
        self.task_id = task_id
        self.obs_type = obs_type
        self.action_mode = action_space
        self.provider = provider
        if not (0 <= settle_s <= 10 and quiet_s >= 0 and 0 <= answer_s <= 10):
            raise ValueError(
                f"expected 0 <= settle_s <= 10, quiet_s >= 0 and 0 <= answer_s <= 10, got {settle_s=}, {quiet_s=}, "
                f"{answer_s=}"
            )
        self.settle_s = float(settle_s)
        self.quiet_s = float(quiet_s)
        self.answer_s = float(answer_s)
        self.pause_s = None if pause_s is None else float(pause_s)
        #: the last settle's ``{"waited_s", "settled", "polls"}`` (``None``: no settle, or the server cannot)
        self.last_settle: dict[str, Any] | None = None
        self.wait_s = float(wait_s)
        self.action_timeout_s = float(action_timeout_s)
        self.a11y_max_tokens = int(a11y_max_tokens)
        self.render_mode = render_mode

        self._session: Any = None
        self._server: Any = None
        self._container: Any = None
        self._server_url = server_url
        self._token = token
        self._docker_image = docker_image
        self._requested_size = tuple(screen_size) if screen_size is not None else None
        self.client = self._connect()
        try:  # a desktop was started (or reached): nothing below may leave it behind
            width, height = self.client.screen_size()
            if self._requested_size is not None and (width, height) != self._requested_size:
                raise ValueError(f"the remote desktop is {width}x{height}, not the requested {self._requested_size}")
            if self._builtin:  # the shipped tasks whose apps the desktop (here, remote or in a container) has
                self.tasks = builtin_tasks(installed=self.client.installed_apps())
            elif pool is not None:  # and the apps the given tasks need (unknown on OSWorld's own server)
                pool = pool.select(installed=self.client.installed_apps())
                pool.require_tasks()
                self.tasks, self.skipped_tasks = list(pool.tasks), list(pool.skipped)
                if pool.skipped:
                    target = shlex.quote(pool.source) if pool.source else "PATH"
                    warnings.warn(f"{pool.summary()}. The list: env.unwrapped.skipped_tasks, or run "
                                  f"`agentrl osworld coverage {target}`", UserWarning, stacklevel=2)
            self._by_id = {task.id: task for task in self.tasks}
            if task_id is not None:
                self._lookup(task_id)
        except BaseException:
            self.close()
            raise
        self.width, self.height = width, height

        obs: dict[str, spaces.Space[Any]] = {"instruction": UnicodeText(max_length=8192)}
        if obs_type in ("screenshot", "screenshot_a11y_tree", "som"):
            obs["screenshot"] = spaces.Box(0, 255, (height, width, 3), np.uint8)
        if obs_type != "screenshot":
            obs["accessibility_tree"] = UnicodeText(max_length=MAX_TREE_CHARS)
        self.observation_space = spaces.Dict(obs)
        self._obs_keys = frozenset(obs)
        if action_space == "pyautogui":
            self.action_space = UnicodeText(max_length=MAX_CODE_CHARS)
        else:
            self.action_space = computer13_space(width, height)

        self.task: OSWorldTask | None = None
        self._last_screenshot: np.ndarray | None = None
        self.last_setup_s = 0.0

    # ------------------------------------------------------------------ providers
    def _connect(self) -> Any:
        from agentrl.envs.osworld.client import DesktopClient

        if self.provider == "remote":
            if not self._server_url:
                raise ValueError(
                    "provider='remote' needs server_url='http://HOST:PORT' (start one with: agentrl serve-desktop)"
                )
            return DesktopClient(self._server_url, token=self._token)
        if self.provider == "docker":
            from agentrl.envs.osworld.runtime.container import DesktopContainer

            width, height = self._requested_size or (1280, 720)
            self._container = DesktopContainer(width=width, height=height, image=self._docker_image)
            return DesktopClient(self._container.base_url, token=self._container.token)
        return self._start_local()

    def _start_local(self) -> Any:
        from agentrl.envs.osworld.client import DesktopClient
        from agentrl.envs.osworld.runtime.desktop import DesktopSession
        from agentrl.envs.osworld.server import serve_desktop

        width, height = self._requested_size or (1280, 720)
        self._session = DesktopSession(width, height)
        token = secrets.token_urlsafe(16)
        try:
            self._server = serve_desktop(self._session, token=token)
        except BaseException:
            self._session.close()
            raise
        return DesktopClient(self._server.base_url, token=token)

    def _close_client(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()  # its kept-alive connections (a ResourceWarning each when left to the GC)

    def _stop_local(self) -> None:
        if self._server is not None:
            with contextlib.suppress(Exception):
                self._server.close()
            self._server = None
        if self._session is not None:
            with contextlib.suppress(Exception):
                self._session.close()
            self._session = None

    def _revive(self) -> None:
        """After an env error: a local desktop is rebuilt; a remote one must answer again."""
        if self.client.alive():
            return
        self._close_client()
        if self.provider == "local":
            self._stop_local()
            self.client = self._start_local()
        elif self.provider == "docker" and self._container is not None:
            self._container.restart()
            from agentrl.envs.osworld.client import DesktopClient

            self.client = DesktopClient(self._container.base_url, token=self._container.token)
        else:
            raise ConnectionError(f"the desktop server at {self.client.base_url} does not answer")

    # ------------------------------------------------------------------ tasks
    def _lookup(self, task_id: str) -> OSWorldTask:
        try:
            return self._by_id[task_id]
        except KeyError:
            for skipped in self.skipped_tasks:
                if skipped.id == task_id:
                    reasons = "; ".join(reason.message for reason in skipped.reasons[:3])
                    raise UnknownTask(task_id, hint=f"it was left out of the pool: {reasons}") from None
            close = did_you_mean(task_id, list(self._by_id)).removeprefix("; ")
            loaded = f"{len(self._by_id)} tasks are loaded"
            raise UnknownTask(task_id, hint=f"{close} ({loaded})" if close else loaded) from None

    def task_ids(self) -> list[str]:
        """Every task id of the pool, in order (a task list's order; a folder's sorted paths)."""
        return [task.id for task in self.tasks]

    def dataset_card(self) -> DatasetCard:
        """The task list's (or folder's) card; its files are the tasks' JSON files; scored by success rate.

        Raises:
            NoTaskDataset: the tasks were given as objects, not read from files.
        """
        from agentrl.core.dataset import NoTaskDataset

        files = tuple(str(Path(task.file).resolve()) for task in self.tasks if task.file)
        if self._dataset_path is None or len(files) != len(self.tasks):
            raise NoTaskDataset("these OSWorld tasks were given as objects, not files; to sweep a dataset give its "
                                "folder: --env-kwarg tasks=path/to/evaluation_examples --split test_all")
        if self._dataset_path.is_file():
            files = (str(self._dataset_path), *files)
        metric = "success rate"
        if self.skipped_tasks:  # the score is not OSWorld's over the whole list: say so where it is reported
            metric += (f" over the {len(self.tasks)} of {len(self.tasks) + len(self.skipped_tasks)} tasks this "
                       "desktop can run")
        return DatasetCard(name="OSWorld", path=str(self._dataset_path), metric=metric, split=self.split,
                           files=files)

    @property
    def max_steps(self) -> int:
        """The step budget (the contract's ``max_turns``)."""
        return self.max_turns

    def oracle_plan(self) -> tuple[str, ...]:
        """The current task's oracle, as env actions (``()`` when it has none).

        Our ``"oracle"`` key in the task JSON, else the scripted solution of that OSWorld task id
        (:mod:`~agentrl.envs.osworld.tasks.real_oracles`), so OSWorld's own files stay as they are.
        """
        if self.task is None:
            raise ResetNeeded("no task yet: call env.reset() first")
        return tuple(self.task.oracle_actions) or (real_oracle(self.task.id) or ())

    @property
    def oracle_actions(self) -> tuple[str, ...]:
        """The current task's oracle actions (deprecated: use ``oracle_action()``, the one oracle convention)."""
        return self.oracle_plan()

    # ------------------------------------------------------------------ the episode contract's hooks
    def begin_episode(self, options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Restore the desktop, run the task's setup steps, return the first observation."""
        if isinstance(options.get("task"), OSWorldTask):
            task = options["task"]
        elif options.get("task_id") is not None:
            task = self._lookup(str(options["task_id"]))
        elif self.task_id is not None:
            task = self._lookup(self.task_id)
        else:
            task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        missing = missing_assets(task, self.assets)
        if missing:  # before the desktop is touched: an episode never starts without its files
            raise MissingAsset(f"task {task.id!r}: {self.assets.missing_message(missing)}")
        self._revive()
        self.client.reset()
        base_dir = Path(task.file).parent if task.file else None
        setup_warnings: list[str] = []  # OSWorld's files: steps that failed and were stepped over, as OSWorld does
        self.client.clear_cache()  # no getter of this episode reads an earlier episode's files
        self.last_setup_s = run_setup(self.client, task.config, base_dir=base_dir, assets=self.assets,
                                      lenient=task.from_osworld, warnings=setup_warnings)
        self.task = task
        self._wait_for_screen()
        obs = self._observe()
        return obs, {**self._desktop_info(None), "setup_warnings": setup_warnings}

    def act(self, turn: Turn[dict[str, Any]]) -> None:
        """Run one action; ``DONE``/``FAIL`` end the episode; a dead display or a crash is an ``env_error``."""
        parsed: Action | None = None
        action_error: str | None = None
        tool_error: str | None = None
        try:
            parsed = self._parse(turn.action)
        except ActionError as exc:
            action_error = str(exc)

        done_reason: str | None = None
        obs: dict[str, Any] | None = None
        try:
            if parsed is not None:
                action_error = tool_error = self._execute(parsed)
            health = self.client.health()
            if not health.get("alive", False):
                done_reason = "env_error"
                tool_error = "the desktop's display died"
            elif health.get("crashed"):
                done_reason = "env_error"
                tool_error = f"an application crashed: {', '.join(map(str, health['crashed']))}"
            else:
                obs = self._observe()
        except (OSError, urllib.error.URLError, ConnectionError, json.JSONDecodeError) as exc:
            done_reason = "env_error"
            tool_error = f"the desktop failed: {type(exc).__name__}: {exc}"
        if done_reason == "env_error":
            action_error = action_error or tool_error
            turn.terminated = True
            obs = self._blank_observation()
        elif parsed is not None and parsed.kind in ("DONE", "FAIL"):
            turn.terminated = True
            done_reason = parsed.kind.lower()
        turn.parsed, turn.observation, turn.done_reason = parsed, obs, done_reason
        turn.action_error, turn.tool_error = action_error, tool_error
        turn.info = self._desktop_info(parsed)

    def score_at_end(self, turn: Turn[dict[str, Any]]) -> Score | None:
        """The task's evaluator (after its postconfig), once ``DONE``, ``FAIL`` or the budget ended the episode."""
        if turn.done_reason not in ("done", "fail", self.budget_done_reason):
            return None
        reward, details = self._evaluate(turn.parsed)
        turn.info["eval_details"] = details
        return Score(reward, {"evaluator": reward})

    def finish_turn(self, turn: Turn[dict[str, Any]]) -> None:
        """The deprecated ``step``/``steps_left`` aliases follow the turn counter."""
        turn.info.update(self._desktop_info(turn.parsed))

    def current_task_id(self) -> str | None:
        """The current task's id."""
        return None if self.task is None else self.task.id

    def release(self) -> None:
        """Stop the desktop (or disconnect from a remote one); every connection the env opened is closed."""
        self._close_client()
        self._stop_local()
        if self._container is not None:
            with contextlib.suppress(Exception):
                self._container.close()
            self._container = None

    def render(self) -> np.ndarray | None:  # type: ignore[override]  # gymnasium: an unbound TypeVar
        """The last screenshot (``render_mode="rgb_array"``)."""
        if self.render_mode != "rgb_array":
            return None
        return None if self._last_screenshot is None else self._last_screenshot.copy()

    # ------------------------------------------------------------------ internals
    def _parse(self, action: Any) -> Action:
        if self.action_mode == "pyautogui":
            if not isinstance(action, str):
                raise ActionError(f"expected pyautogui code as a str, got {type(action).__name__}")
            return parse_pyautogui(action)
        if isinstance(action, str):
            return parse_computer13(action, screen=(self.width, self.height))
        if (
            isinstance(action, Mapping)
            and "action_type" in action
            and not isinstance(action["action_type"], (int, np.integer))
        ):
            return parse_computer13(action, screen=(self.width, self.height))
        if isinstance(action, Mapping):
            return from_space_sample(action, screen=(self.width, self.height))
        raise ActionError(f"expected a computer_13 action (a dict or its JSON text), got {type(action).__name__}")

    def _execute(self, action: Action) -> str | None:
        if action.kind == "WAIT":
            time.sleep(self.wait_s)
            return None
        if action.kind in ("DONE", "FAIL"):
            return None
        result = self.client.pyautogui(action.code, timeout_s=self.action_timeout_s)
        self._wait_for_screen()
        if result.get("ok"):
            return None
        error = str(result.get("error") or "the action failed").strip()
        return error[-2000:]

    def _wait_for_screen(self) -> None:
        """After an action: the fixed pause, if any, then wait until the desktop holds still (``settle_s``)."""
        if self.pause_s:
            time.sleep(self.pause_s)
        self.last_settle = None
        if self.settle_s:
            self.last_settle = self.client.settle(self.settle_s, min(self.quiet_s, self.settle_s), self.answer_s)
        if self.settle_s and self.last_settle is None and self.pause_s is None:
            time.sleep(0.1)  # a server that cannot settle (OSWorld's VM server): the fixed pause of before

    def _evaluate(self, parsed: Action | None) -> tuple[float, list[dict[str, Any]]]:
        assert self.task is not None
        last = None if parsed is None else (parsed.code if parsed.kind == "code" else parsed.kind)
        postconfig = self.task.evaluator.postconfig
        if postconfig:
            try:
                run_setup(self.client, postconfig, base_dir=Path(self.task.file).parent if self.task.file else None,
                          assets=self.assets, lenient=self.task.from_osworld)
            except Exception as exc:  # a postconfig that fails scores 0, as a missing file does
                return 0.0, [{"func": "postconfig", "score": 0.0, "error": str(exc)}]
        score, details = evaluate(self.task, last_action=last, get=self._get)
        return float(score), details

    def _get(self, spec: dict[str, Any]) -> Any:
        """The evaluator's getters: ``cloud_file`` from the asset cache, the others from the desktop."""
        if spec.get("type") == "cloud_file":
            return cloud_file(spec, self.assets, self.client.cache_dir)
        return self.client.get(spec)

    def _observe(self) -> dict[str, Any]:
        assert self.task is not None
        obs: dict[str, Any] = {"instruction": self.task.instruction}
        shot = None
        if "screenshot" in self._obs_keys:
            shot = self.client.screenshot_array()
            self._last_screenshot = shot
        if self.obs_type != "screenshot":
            from agentrl.envs.osworld.a11y import linearize, marks, trim

            xml = self.client.accessibility_tree() or ""
            if self.obs_type == "som":
                from agentrl.envs.osworld.som import draw_marks, marks_table

                found = marks(xml) if xml else []
                assert shot is not None
                obs["screenshot"] = draw_marks(shot, found)
                obs["accessibility_tree"] = trim(marks_table(found), self.a11y_max_tokens)[:MAX_TREE_CHARS]
            else:
                obs["accessibility_tree"] = trim(linearize(xml), self.a11y_max_tokens)[:MAX_TREE_CHARS] if xml else ""
        if shot is not None and "screenshot" not in obs:
            obs["screenshot"] = shot
        return obs

    def _blank_observation(self) -> dict[str, Any]:
        obs: dict[str, Any] = {"instruction": self.task.instruction if self.task else ""}
        if "screenshot" in self._obs_keys:
            obs["screenshot"] = np.zeros((self.height, self.width, 3), np.uint8)
        if "accessibility_tree" in self._obs_keys:
            obs["accessibility_tree"] = ""
        return obs

    def _desktop_info(self, parsed: Action | None) -> dict[str, Any]:
        """The desktop's own info keys (``step``/``steps_left``: deprecated aliases of ``turn``/``turns_left``)."""
        return {
            "step": self._turn,
            "steps_left": self.max_turns - self._turn,
            "parsed_action": None
            if parsed is None
            else {"kind": parsed.kind, "code": parsed.code, "structured": parsed.structured},
        }
