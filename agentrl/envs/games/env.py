"""``AgentRL/FlashGame-<Game>-v0``: browser games as Gymnasium envs with pixel observations.

The games are our own HTML5-canvas games (and real Flash through Ruffle), run in headless Chromium
(:mod:`agentrl.envs.games.browser`) under a virtual clock (``assets/runtime.js``): the page's
``requestAnimationFrame``, timers, ``Date`` and ``performance.now`` read the env's clock, so one
``step`` advances exactly ``frames_per_step`` frames and the game stands still between steps. The
same seed and actions give the same frames.
"""

from __future__ import annotations

import base64
import importlib
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from agentrl.core.episode import EpisodeEnv, Turn
from agentrl.core.errors import InvalidActionType, ResetNeeded
from agentrl.core.spaces import UnicodeText
from agentrl.envs.games.browser import ASSETS, BrowserError, GamePage

__all__ = [
    "ACTION_MODES",
    "make_game_env",
    "registered_game_ids",
    "GAMES",
    "KEYS",
    "POINTER_KINDS",
    "BrowserGameEnv",
    "GameSpec",
    "parse_pointer_action",
]

ACTION_MODES = ("discrete", "text", "mouse_keyboard")
OBS_TYPES = ("pixels", "text", "pixels_text")
#: keys a mouse/keyboard agent may press (KeyboardEvent.key names)
KEYS = (
    "ArrowUp",
    "ArrowDown",
    "ArrowLeft",
    "ArrowRight",
    " ",
    "Enter",
    "Escape",
    "Backspace",
    "Tab",
    *"abcdefghijklmnopqrstuvwxyz0123456789",
)
#: the kinds of a mouse/keyboard action, in the order of the Dict space's ``kind``
POINTER_KINDS = ("click", "double_click", "drag", "press", "type", "wait")
MAX_TYPE_CHARS = 64
_RUNTIME = (ASSETS / "runtime.js").read_text(encoding="utf-8")


@dataclass(frozen=True)
class GameSpec:
    """A registered game: what its oracle module's ``SPEC`` says, plus the oracle."""

    name: str
    env_name: str
    title: str
    description: str
    max_steps: int
    frames_per_step: int
    options: Mapping[str, Any]
    reward: str
    oracle: Any
    scripts: tuple[str, ...] = ()
    roots: Mapping[str, Any] = field(default_factory=dict)
    baselines: Mapping[str, float] = field(default_factory=dict)
    timeout_s: float = 10.0


def _load_games() -> dict[str, GameSpec]:
    games: dict[str, GameSpec] = {}
    folder = Path(__file__).parent / "oracles"
    baselines = _baselines()
    for module_path in sorted(folder.glob("*.py")):
        if module_path.stem.startswith("_"):
            continue
        module = importlib.import_module(f"agentrl.envs.games.oracles.{module_path.stem}")
        spec = dict(module.SPEC)
        games[spec["name"]] = GameSpec(
            name=spec["name"],
            env_name=spec["env_name"],
            title=str(spec.get("title", spec["name"])),
            description=spec.get("description", ""),
            max_steps=int(spec["max_steps"]),
            frames_per_step=int(spec.get("frames_per_step", 1)),
            options=dict(spec.get("options", {})),
            reward=spec.get("reward", "score"),
            oracle=module.oracle,
            scripts=tuple(spec.get("scripts", ())),
            roots=dict(spec.get("roots", {})),
            baselines=baselines.get(spec["name"], {}),
            timeout_s=float(spec.get("timeout_s", 10.0)),
        )
    return games


def _baselines() -> dict[str, dict[str, float]]:
    path = ASSETS / "baselines.json"
    return json.loads(path.read_text()) if path.is_file() else {}


#: every game with an oracle module, by name
GAMES: dict[str, GameSpec] = _load_games()

_CALL = re.compile(r"^\s*([a-z_]+)\s*\((.*)\)\s*$", re.DOTALL)


def parse_pointer_action(text: str) -> dict[str, Any] | str:
    """A mouse/keyboard action in text form, or the error message.

    Forms: ``click(x, y)``, ``double_click(x, y)``, ``drag(x1, y1, x2, y2)``, ``press(key)``,
    ``type("text")``, ``wait()``; coordinates are observation pixels.

    >>> parse_pointer_action("click(10, 20)")
    {'kind': 'click', 'points': [10.0, 20.0]}
    >>> parse_pointer_action("press(ArrowUp)")
    {'kind': 'press', 'key': 'ArrowUp'}
    >>> parse_pointer_action("jump()").split(";")[0]
    "unknown action 'jump'"
    """
    if not isinstance(text, str):
        return f"expected a str action, got {type(text).__name__}"
    match = _CALL.match(text.strip().splitlines()[-1] if text.strip() else "")
    if not match:
        return 'expected one action such as click(120, 64), press(ArrowUp), type("abc") or wait()'
    kind, body = match.group(1), match.group(2).strip()
    if kind not in POINTER_KINDS:
        return (
            f"unknown action {kind!r}; use click(x, y), double_click(x, y), drag(x1, y1, x2, y2), "
            'press(key), type("text") or wait()'
        )
    if kind in ("click", "double_click", "drag"):
        parts = [p.strip() for p in body.split(",") if p.strip()]
        wanted = 4 if kind == "drag" else 2
        try:
            values = [float(p) for p in parts]
        except ValueError:
            return f"{kind} takes {wanted} numbers, got {body!r}"
        if len(values) != wanted or not all(np.isfinite(values)):
            return f"{kind} takes {wanted} numbers, got {body!r}"
        return {"kind": kind, "points": values}
    if kind == "press":
        key = body.strip().strip("'\"") if body.strip() not in ("' '", '" "') else " "
        if key.lower() == "space":
            key = " "
        if key not in KEYS:
            return f"unknown key {key!r}; keys: {', '.join(k if k != ' ' else 'space' for k in KEYS[:9])}, a-z, 0-9"
        return {"kind": "press", "key": key}
    if kind == "type":
        value = body.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if len(value) > MAX_TYPE_CHARS:
            return f"type() takes at most {MAX_TYPE_CHARS} characters, got {len(value)}"
        return {"kind": "type", "text": value}
    return {"kind": "wait"}


class BrowserGameEnv(EpisodeEnv[Any, Any]):
    r"""A browser game with pixel observations; see the module docstring.

    ## Description

    One of our HTML5-canvas games (2048, Sokoban, Tetris, Minesweeper, match-3, memory, escape
    rooms, hidden-object scenes) or a .swf through Ruffle, played in headless Chromium. Each game
    exposes its score, milestones and end to the env; an oracle (a scripted expert) solves it.

    ## Action Space

    ``action_mode="discrete"``: ``Discrete(n)``, the game's named moves (Stable-Baselines3 works
    unchanged). ``"text"``: the move's name as a str (LMGame-Bench style); ``"mouse_keyboard"``: a str
    such as ``click(120, 64)``, ``double_click(x, y)``, ``drag(x1, y1, x2, y2)``, ``press(ArrowUp)``,
    ``type("abc")``, ``wait()`` (observation pixels), or with ``action_format="dict"`` a ``Dict`` space
    (``kind``, ``point`` in [0, 1]^4, ``key``, ``text``).

    ## Observation Space

    ``obs_type="pixels"``: ``Box(0, 255, (H, W, 3), uint8)`` (``obs_size``, default 84x84); ``"text"``: a
    text description of what a player sees; ``"pixels_text"``: ``Dict(pixels, text)``.

    ## Rewards

    ``reward="score"``: the change in the game's score; ``"milestones"``: +1 per milestone reached (the
    game's default is in its spec). ``info``: the episode contract's keys (``task_id`` (the game's
    name), ``turn``, ``turns_left``, ``action_error``, ``tool_error`` (why the page failed),
    ``void_turn``, ``done_reason``, ``reward_components`` (``{"score": ...}`` or ``{"milestones":
    ...}``, this step's reward)), and the game's own: ``score``, ``milestones_done``,
    ``milestones_total``, ``milestones`` (names reached), ``normalized_score`` (0 = the recorded
    random agent, 1 = the scripted expert), ``won``, ``success``; ``step`` and ``steps_left`` are
    deprecated aliases of ``turn`` and ``turns_left`` (kept for one release).

    ## Starting State

    A new game from ``reset(seed=...)`` (the game's level/board is drawn from the seed).

    ## Episode End

    Terminated when the game ends (``done_reason="won"`` or ``"game_over"``) or the page fails
    (``"env_error"``: a crash or a hang; the next reset opens a fresh page); truncated after
    ``max_steps``.

    ## Arguments

    ``game``, ``action_mode``, ``action_format`` (``"text"`` or ``"dict"``), ``obs_type``, ``obs_size``
    ((H, W)), ``frames_per_step``, ``max_steps``, ``reward``, ``game_options`` (e.g. ``{"difficulty":
    3}``), ``render_mode`` (``"rgb_array"`` for ``RecordVideo``), ``render_size``, ``timeout_s``,
    ``stuck_limit`` (truncate with ``done_reason="stuck"`` after that many refused moves in a row:
    keeps an RL policy from spending an episode on an illegal move), ``realtime`` (advance the clock by
    the wall time since the last step, at 60 frames a second, instead of ``frames_per_step``: the game
    runs on while the agent thinks; not deterministic), ``milestone_judge`` and ``judge_milestones``
    (FlashAdventure-style VLM milestones beside the game's own: a
    :class:`~agentrl.envs.games.vlm_judge.MilestoneJudge` and a ``{name: description}`` mapping; at
    reset and after each step the judge is asked, on a canvas-size screenshot, about each of these
    milestones not yet reached (one VLM call each, unless cached). A milestone it confirms stays
    reached for the episode, is listed in ``info["milestones"]`` and counted in ``milestones_done`` and
    ``milestones_total``, and earns +1 in ``reward="milestones"`` mode (not when reached at reset, as
    game milestones); a name equal to a game milestone's is the same milestone. A failing judge
    backend raises its error from ``reset``/``step``).

    ## Version History

    * v0: initial release. Since issue 19 it is on the episode contract
      (:class:`~agentrl.core.episode.EpisodeEnv`): ``info`` gained ``task_id``, ``turn``,
      ``turns_left``, ``tool_error``, ``void_turn`` and ``reward_components``; ``step`` and
      ``steps_left`` are deprecated (same values as ``turn`` and ``turns_left``) and go in v1.
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 15, "stop_sequences": ()}
    episode_kind = "pixels"
    budget_done_reason = "max_steps"
    deprecated_info = {"step": "use info['turn'] (same value); removed in v1",
                       "steps_left": "use info['turns_left'] (same value); removed in v1"}

    def __init__(
        self,
        game: str,
        *,
        action_mode: str = "discrete",
        action_format: str = "text",
        obs_type: str = "pixels",
        obs_size: tuple[int, int] = (84, 84),
        frames_per_step: int | None = None,
        max_steps: int | None = None,
        reward: str | None = None,
        game_options: Mapping[str, Any] | None = None,
        render_mode: str | None = None,
        render_size: tuple[int, int] | None = None,
        timeout_s: float | None = None,
        stuck_limit: int | None = None,
        realtime: bool = False,
        milestone_judge: Any = None,
        judge_milestones: Mapping[str, str] | None = None,
    ) -> None:
        from agentrl.core.choices import check_choice

        if (milestone_judge is None) != (not judge_milestones):
            raise ValueError("milestone_judge and judge_milestones ({name: description}) go together")
        if judge_milestones and not all(isinstance(k, str) and isinstance(v, str) for k, v in judge_milestones.items()):
            raise ValueError(
                f"judge_milestones must map names (str) to descriptions (str), got {judge_milestones!r:.80}"
            )
        self.milestone_judge = milestone_judge
        self.judge_milestones: dict[str, str] = dict(judge_milestones or {})
        self._judged: list[str] = []

        self.spec_game = GAMES[check_choice("game", game, sorted(GAMES))]
        self.action_mode = check_choice("action_mode", action_mode, ACTION_MODES)
        self.action_format = check_choice("action_format", action_format, ("text", "dict"))
        self.obs_type = check_choice("obs_type", obs_type, OBS_TYPES)
        self.reward_mode = check_choice("reward", reward or self.spec_game.reward, ("score", "milestones"))
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be 'rgb_array' or None, got {render_mode!r}")
        height, width = (int(v) for v in obs_size)
        if not (8 <= height <= 1024 and 8 <= width <= 1024):
            raise ValueError(f"obs_size must be (H, W) with 8 <= H, W <= 1024, got {obs_size}")
        self.obs_size = (height, width)
        self.frames_per_step = int(frames_per_step or self.spec_game.frames_per_step)
        super().__init__(max_turns=int(max_steps or self.spec_game.max_steps))
        self.options = {**self.spec_game.options, **dict(game_options or {})}
        self.render_mode = render_mode
        self.timeout_s = float(timeout_s or self.spec_game.timeout_s)
        if stuck_limit is not None and stuck_limit < 1:
            raise ValueError(f"stuck_limit must be None or >= 1, got {stuck_limit}")
        self.stuck_limit = stuck_limit
        self._stuck = 0
        self.realtime = bool(realtime)
        self._last_step_time: float | None = None
        self._page: GamePage | None = None
        self._info0 = self._probe()
        self.moves: tuple[str, ...] = tuple(self._info0["moves"])
        self.canvas_size = (int(self._info0["height"]), int(self._info0["width"]))
        self.render_size = tuple(render_size) if render_size else self.canvas_size
        pixels = spaces.Box(0, 255, shape=(height, width, 3), dtype=np.uint8)
        text = UnicodeText(4096)
        self.observation_space = {
            "pixels": pixels,
            "text": text,
            "pixels_text": spaces.Dict({"pixels": pixels, "text": text}),
        }[self.obs_type]
        if self.action_mode == "discrete":
            self.action_space = spaces.Discrete(len(self.moves))
        elif self.action_mode == "text" or self.action_format == "text":
            self.action_space = UnicodeText(256)
        else:
            self.action_space = spaces.Dict(
                {
                    "kind": spaces.Discrete(len(POINTER_KINDS)),
                    "point": spaces.Box(0.0, 1.0, shape=(4,), dtype=np.float32),
                    "key": spaces.Discrete(len(KEYS)),
                    "text": UnicodeText(MAX_TYPE_CHARS),
                }
            )
        self._status: dict[str, Any] = {}
        self._gain = 0.0
        self._last_frame: np.ndarray | None = None

    @property
    def max_steps(self) -> int:
        """The step budget (the contract's ``max_turns``)."""
        return self.max_turns

    # -- page plumbing -----------------------------------------------------------------------
    def _html(self) -> str:
        scripts = [*self.spec_game.scripts, f"/games/{self.spec_game.name}.js"]
        tags = "".join(f'<script src="{src}"></script>' for src in scripts)
        return f"<!doctype html><html><head><meta charset='utf-8'></head><body>{tags}</body></html>"

    def _open_page(self) -> GamePage:
        if self._page is None or not self._page.is_open:
            roots = {key: Path(value() if callable(value) else value) for key, value in self.spec_game.roots.items()}
            width, height = max(self.canvas_size_hint()), max(self.canvas_size_hint())
            self._page = GamePage(
                roots=roots, pages={"play.html": self._html()}, viewport=(width, height), timeout_s=self.timeout_s
            )
            self._page.open("play.html", [_RUNTIME])
        return self._page

    def canvas_size_hint(self) -> tuple[int, int]:
        """The viewport to open pages with (the canvas once known, else a default)."""
        size = getattr(self, "canvas_size", None)
        return (int(size[1]) + 16, int(size[0]) + 16) if size else (1024, 1024)

    def _start(self, seed: int) -> dict[str, Any]:
        page = self._open_page()
        info = page.evaluate("([n, o, s]) => AgentRL.start(n, o, s)", [self.spec_game.name, self.options, seed])
        deadline = time.monotonic() + self.timeout_s * 3
        while not info.get("ready", True):  # a game that loads something (Ruffle) says when it is ready
            if time.monotonic() > deadline:
                raise BrowserError(f"{self.spec_game.name} did not become ready within {self.timeout_s * 3:g} s")
            time.sleep(0.02)  # loading runs in real time (fetch, wasm compile); frames wait for it
            info = {**info, **page.evaluate("r => AgentRL.step(r)", {"frames": 1})}
        return info

    def _probe(self) -> dict[str, Any]:
        return self._start(0)

    def _frames(self) -> int:
        """Frames to advance: fixed, or in real-time mode as many 60 fps frames as wall time has passed."""
        if not self.realtime:
            return self.frames_per_step
        now = time.monotonic()
        last, self._last_step_time = self._last_step_time, now
        if last is None:
            return self.frames_per_step
        return max(1, min(600, round((now - last) * 60)))

    def _request(self, extra: Mapping[str, Any]) -> dict[str, Any]:
        request: dict[str, Any] = {"frames": self._frames(), **extra}
        if self.obs_type in ("pixels", "pixels_text"):
            request["capture"] = [self.obs_size[1], self.obs_size[0]]
        if self.obs_type in ("text", "pixels_text"):
            request["text"] = True
        assert self._page is not None
        return self._page.evaluate("r => AgentRL.step(r)", request)

    def _with_judged(self, out: dict[str, Any]) -> dict[str, Any]:
        """``out`` with the judge's milestones merged into ``reached`` and ``milestones`` (no judge: ``out``)."""
        if self.milestone_judge is None:
            return out
        reached = list(out.get("reached", ()))
        pending = {n: d for n, d in self.judge_milestones.items() if n not in reached and n not in self._judged}
        if pending:
            assert self._page is not None
            height, width = self.canvas_size
            raw = self._page.evaluate("([w, h]) => AgentRL.capture(w, h)", [width, height])
            frame = np.frombuffer(base64.b64decode(raw), dtype=np.uint8).reshape(height, width, 3)
            self._judged += self.milestone_judge.milestones(frame, pending)
        names = list(out.get("milestones", ()))
        return {
            **out,
            "reached": reached + [n for n in self._judged if n not in reached],
            "milestones": names + [n for n in self.judge_milestones if n not in names],
        }

    def _observation(self, out: Mapping[str, Any]) -> Any:
        pixels = None
        if "frame" in out:
            raw = base64.b64decode(out["frame"])
            pixels = np.frombuffer(raw, dtype=np.uint8).reshape(self.obs_size[0], self.obs_size[1], 3).copy()
            self._last_frame = pixels
        return self._shaped(pixels, str(out.get("text", ""))[:4096])

    def _shaped(self, pixels: np.ndarray | None, text: str) -> Any:
        """An observation of this env's ``obs_type`` from its parts."""
        if self.obs_type == "pixels":
            return pixels
        if self.obs_type == "text":
            return text
        return {"pixels": pixels, "text": text}

    # -- the episode contract's hooks ------------------------------------------------------------
    def begin_episode(self, options: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Start a new game drawn from the reset seed (or from ``np_random``)."""
        if options:
            raise ValueError(f"reset options are not supported by game envs, got {sorted(options)}")
        game_seed = int(self.np_random.integers(2**31 - 1))
        self._start(game_seed)
        self._stuck = 0
        self._last_step_time = None
        self._judged = []
        out = self._with_judged(self._request({"frames": 0}))
        self._status = out
        return self._observation(out), self._game_info(out)

    def act(self, turn: Turn[Any]) -> None:
        """Apply one action, advance ``frames_per_step`` frames, observe; a page failure ends the episode."""
        before = self._status
        self._gain = 0.0
        try:
            out, action_error = self._act(turn.action)
            out = self._with_judged(out)
        except BrowserError as exc:
            # the last frame seen (a blank one before any), as the page is gone
            frame = np.zeros((*self.obs_size, 3), np.uint8) if self._last_frame is None else self._last_frame
            turn.observation = self._shaped(frame, "")
            turn.terminated, turn.done_reason, turn.tool_error = True, "env_error", str(exc)
            turn.info = {**self._game_info(before), "env_error": str(exc)}
            return
        self._gain = self._reward(before, out)
        self._status = out
        self._stuck = self._stuck + 1 if action_error else 0
        turn.action_error = action_error
        turn.reward_components = {self.reward_mode: self._gain}
        if out["done"]:
            turn.terminated, turn.done_reason = True, ("won" if out["won"] else "game_over")
        elif self.stuck_limit is not None and self._stuck >= self.stuck_limit and self._turn < self.max_turns:
            turn.truncated, turn.done_reason = True, "stuck"
        turn.observation = self._observation(out)
        turn.info = self._game_info(out)

    def step_reward(self, turn: Turn[Any]) -> float:
        """The change in the game's score (or milestones) this step."""
        return self._gain

    def current_task_id(self) -> str | None:
        """The game's name."""
        return self.spec_game.name

    def release(self) -> None:
        """Close the page."""
        if self._page is not None:
            self._page.close()
            self._page = None

    def _act(self, action: Any) -> tuple[dict[str, Any], str | None]:
        if self.action_mode == "discrete":
            if (
                isinstance(action, (bool, np.bool_))
                or not isinstance(action, (int, np.integer))
                or not (0 <= int(action) < len(self.moves))
            ):
                if isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer):
                    action = int(action)
                else:
                    raise InvalidActionType(f"expected an int in [0, {len(self.moves)}), got {action!r}")
            out = self._request({"move": self.moves[int(action)]})
            return out, out.get("error")
        if self.action_mode == "text":
            if not isinstance(action, str):
                raise InvalidActionType(f"expected a move name (str), got {type(action).__name__}")
            name = action.strip()
            if name not in self.moves:
                from agentrl.core.choices import did_you_mean

                shown = name if len(name) <= 40 else name[:37] + "..."
                out = self._request({})
                return out, f"unknown move {shown!r}{did_you_mean(name, self.moves)}"
            out = self._request({"move": name})
            return out, out.get("error")
        parsed = self._parse_pointer(action)
        if isinstance(parsed, str):
            return self._request({}), parsed
        error = self._dispatch(parsed)
        return self._request({}), error

    def _parse_pointer(self, action: Any) -> dict[str, Any] | str:
        if self.action_format == "text":
            return parse_pointer_action(action)
        if not isinstance(action, Mapping) or "kind" not in action:
            raise InvalidActionType("expected a dict action with 'kind', 'point', 'key', 'text'")
        kind = POINTER_KINDS[int(action["kind"])]
        point = np.asarray(action.get("point", np.zeros(4)), dtype=np.float64).reshape(-1)
        scale = [self.obs_size[1], self.obs_size[0]] * 2
        points = [float(p) * s for p, s in zip(point[:4], scale, strict=False)]
        if kind in ("click", "double_click"):
            return {"kind": kind, "points": points[:2]}
        if kind == "drag":
            return {"kind": kind, "points": points}
        if kind == "press":
            return {"kind": kind, "key": KEYS[int(action.get("key", 0))]}
        if kind == "type":
            return parse_pointer_action(f'type("{str(action.get("text", ""))[:MAX_TYPE_CHARS]}")')
        return {"kind": "wait"}

    def _to_canvas(self, x: float, y: float) -> tuple[float, float] | None:
        height, width = self.obs_size
        if not (0 <= x < width and 0 <= y < height):
            return None
        return x * self.canvas_size[1] / width, y * self.canvas_size[0] / height

    def _dispatch(self, parsed: Mapping[str, Any]) -> str | None:
        assert self._page is not None
        kind = parsed["kind"]
        if kind == "wait":
            return None
        if kind in ("click", "double_click", "drag"):
            points = parsed["points"]
            mapped = [self._to_canvas(points[i], points[i + 1]) for i in range(0, len(points), 2)]
            canvas = [p for p in mapped if p is not None]
            if len(canvas) != len(mapped):
                return f"{kind} at {points} is outside the screen ({self.obs_size[1]}x{self.obs_size[0]} pixels)"
            if kind == "click":
                ((x, y),) = canvas
                self._page.call(lambda p: p.mouse.click(x, y))
            elif kind == "double_click":
                ((x, y),) = canvas
                self._page.call(lambda p: p.mouse.dblclick(x, y))
            else:
                (x1, y1), (x2, y2) = canvas

                async def drag(p: Any) -> None:
                    await p.mouse.move(x1, y1)
                    await p.mouse.down()
                    await p.mouse.move(x2, y2, steps=4)
                    await p.mouse.up()

                self._page.call(drag)
            return None
        if kind == "press":
            self._page.call(lambda p: p.keyboard.press(parsed["key"]))
            return None
        self._page.call(lambda p: p.keyboard.type(parsed["text"]))
        return None

    def _reward(self, before: Mapping[str, Any], after: Mapping[str, Any]) -> float:
        if self.reward_mode == "milestones":
            return float(len(after["reached"]) - len(before.get("reached", ())))
        return float(after["score"]) - float(before.get("score", 0.0))

    def _game_info(self, out: Mapping[str, Any]) -> dict[str, Any]:
        score = float(out.get("score", 0.0))
        low, high = self.spec_game.baselines.get("random"), self.spec_game.baselines.get("expert")
        normalized = None  # without recorded baselines (NaN would make two identical infos unequal)
        if low is not None and high is not None and high > low:
            normalized = (score - low) / (high - low)
        return {
            "score": score,
            "milestones": list(out.get("reached", ())),
            "milestones_done": len(out.get("reached", ())),
            "milestones_total": len(out.get("milestones", ())),
            "normalized_score": normalized,
            "won": bool(out.get("won", False)),
            "success": bool(out.get("won", False)),
            "step": self._turn,  # deprecated alias of "turn" (kept for one release)
            "steps_left": self.max_turns - self._turn,  # deprecated alias of "turns_left"
        }

    def render(self) -> np.ndarray | None:  # type: ignore[override]  # gymnasium: an unbound TypeVar
        """``rgb_array``: the current frame at ``render_size`` (H, W) (for ``RecordVideo``)."""
        if self.render_mode != "rgb_array" or self._page is None or not self._page.is_open:
            return None
        height, width = self.render_size
        try:
            raw = self._page.evaluate("([w, h]) => AgentRL.capture(w, h)", [width, height])
        except BrowserError:
            return None
        return np.frombuffer(base64.b64decode(raw), dtype=np.uint8).reshape(height, width, 3).copy()

    # -- privileged ------------------------------------------------------------------------------
    def game_state(self) -> dict[str, Any]:
        """The game's privileged state (for oracles and tests; a policy should not read it)."""
        if self._page is None:
            raise ResetNeeded("no game yet: call env.reset() first")
        return self._page.evaluate("() => AgentRL.game.state()")

    def oracle_action(self) -> Any:
        """The scripted expert's next action, in this env's action mode (the contract's oracle convention)."""
        move = self.spec_game.oracle(self.game_state(), self.moves)
        if self.action_mode == "discrete":
            return self.moves.index(move)
        if self.action_mode == "text":
            return move
        assert self._page is not None
        event = self._page.evaluate("m => AgentRL.inputFor(m)", move)
        if not event:
            raise ValueError(f"{self.spec_game.name}: move {move!r} has no mouse/keyboard equivalent")
        return self._input_action(event)

    def _input_action(self, event: Mapping[str, Any]) -> Any:
        height, width = self.obs_size
        sx, sy = width / self.canvas_size[1], height / self.canvas_size[0]
        kind = event["type"]
        if kind in ("click", "dblclick"):
            x, y = event["x"] * sx, event["y"] * sy
            name = "click" if kind == "click" else "double_click"
            if self.action_format == "dict":
                return {
                    "kind": POINTER_KINDS.index(name),
                    "point": np.array([x / width, y / height, 0, 0], np.float32),
                    "key": 0,
                    "text": "",
                }
            return f"{name}({x:.2f}, {y:.2f})"
        if kind == "drag":
            pts = [event["x1"] * sx, event["y1"] * sy, event["x2"] * sx, event["y2"] * sy]
            if self.action_format == "dict":
                return {
                    "kind": POINTER_KINDS.index("drag"),
                    "point": np.array([pts[0] / width, pts[1] / height, pts[2] / width, pts[3] / height], np.float32),
                    "key": 0,
                    "text": "",
                }
            return "drag({:.2f}, {:.2f}, {:.2f}, {:.2f})".format(*pts)
        key = event["key"]
        if self.action_format == "dict":
            return {
                "kind": POINTER_KINDS.index("press"),
                "point": np.zeros(4, np.float32),
                "key": KEYS.index(key),
                "text": "",
            }
        return f"press({'space' if key == ' ' else key})"


def make_game_env(game: str, **kwargs: Any) -> BrowserGameEnv:
    """Entry point for ``gym.make`` (``AgentRL/FlashGame-<Game>-v0`` passes ``game``)."""
    return BrowserGameEnv(game, **kwargs)


def registered_game_ids() -> list[str]:
    """The ids of the game envs."""
    return [f"AgentRL/FlashGame-{spec.env_name}-v0" for spec in GAMES.values()]
