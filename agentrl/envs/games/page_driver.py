"""A thin driver for one browser game's page: for game authors and the per-game tests.

:class:`GamePageDriver` opens one :class:`~agentrl.envs.games.browser.GamePage` for a registered game
(``agentrl.envs.games.env.GAMES``): the virtual-clock runtime as init script, the game's extra scripts
(e.g. Ruffle for ``swf``) and its served folders, then the game's ``/games/<name>.js``. It speaks the
runtime's ``AgentRL.start`` / ``AgentRL.step`` / ``AgentRL.inputFor`` directly, without the Gymnasium
env's observation and action plumbing, so a test can look at the game's privileged state, its text
and its frames, and play the oracle by named moves or by real mouse/keyboard input::

    with GamePageDriver("g2048") as game:
        info = game.start(seed=0)
        out = game.step("left")
        last, steps = game.play(seed=1, via="input")
        assert last["won"]
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from agentrl.envs.games.browser import BrowserError, GamePage, find_chromium
from agentrl.envs.games.env import _RUNTIME, GAMES, GameSpec

__all__ = ["GamePageDriver", "StepCheck", "no_error"]

#: called by :meth:`GamePageDriver.play` after every step: ``(move, input_event, before, after)``
StepCheck = Callable[[str, "dict[str, Any] | None", "dict[str, Any]", "dict[str, Any]"], None]


def no_error(move: str, event: dict[str, Any] | None, before: dict[str, Any], after: dict[str, Any]) -> None:
    """A :data:`StepCheck` for tests: fail (``AssertionError``) when the game refused ``move``."""
    if after["error"] is not None:
        raise AssertionError(f"{move!r}: {after['error']}")


class GamePageDriver:
    """One open page of one game, driven through the runtime's ``AgentRL`` object.

    Args:
        name: a key of ``agentrl.envs.games.env.GAMES`` (``"g2048"``, ``"swf"``, ...).
        roots: extra or replacing served folders (URL prefix -> folder or a callable returning one),
            merged over the game's own ``roots``.
        viewport: the page size in CSS pixels.
        timeout_s: the deadline of every page call (default: the game's ``timeout_s``).

    Attributes:
        spec: the game's :class:`~agentrl.envs.games.env.GameSpec`.
        page: the raw :class:`~agentrl.envs.games.browser.GamePage` (for custom Playwright input).
        moves: the game's named moves, as the last :meth:`start` reported them.
    """

    def __init__(
        self,
        name: str,
        *,
        roots: Mapping[str, Any] | None = None,
        viewport: tuple[int, int] = (640, 640),
        timeout_s: float | None = None,
    ) -> None:
        if name not in GAMES:
            raise KeyError(f"unknown game {name!r}; games: {', '.join(sorted(GAMES))}")
        self.spec: GameSpec = GAMES[name]
        self.name = name
        self.moves: list[str] = []
        served = {**self.spec.roots, **dict(roots or {})}
        resolved = {key: Path(value() if callable(value) else value) for key, value in served.items()}
        scripts = [*self.spec.scripts, f"/games/{name}.js"]
        tags = "".join(f'<script src="{src}"></script>' for src in scripts)
        html = f"<!doctype html><html><head><meta charset='utf-8'></head><body>{tags}</body></html>"
        self.timeout_s = float(timeout_s or self.spec.timeout_s)
        self.page = GamePage(roots=resolved, pages={"play.html": html}, viewport=viewport, timeout_s=self.timeout_s)
        try:
            self.page.open("play.html", [_RUNTIME])
        except BaseException:
            self.page.close()
            raise

    @classmethod
    def for_tests(cls, name: str, **kwargs: Any) -> GamePageDriver:
        """Open ``name`` for a pytest test, or ``pytest.skip`` with the reason when it cannot run here.

        Skips when Playwright or Chromium is missing, or a served folder cannot be resolved (e.g.
        Ruffle is not installed for ``swf``).
        """
        import pytest

        from agentrl.core.errors import DependencyNotInstalled

        pytest.importorskip("playwright")
        try:
            find_chromium()
        except Exception as exc:  # (no Chromium on this machine)
            pytest.skip(f"no Chromium: {exc}")
        try:
            return cls(name, **kwargs)
        except DependencyNotInstalled as exc:
            pytest.skip(str(exc))

    # -- the runtime's calls ------------------------------------------------------------------
    def start(self, seed: int, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``AgentRL.start(name, options, seed)``: a new game; returns its info (``moves``, ``milestones``...).

        A game that loads something (Ruffle) is stepped one frame at a time until it says it is ready.
        """
        info: dict[str, Any] = self.page.evaluate(
            "([n, o, s]) => AgentRL.start(n, o, s)", [self.name, dict(options or {}), seed]
        )
        deadline = time.monotonic() + self.timeout_s * 3
        while not info.get("ready", True):
            if time.monotonic() > deadline:
                raise BrowserError(f"{self.name} did not become ready within {self.timeout_s * 3:g} s")
            time.sleep(0.02)  # loading runs in real time (fetch, wasm compile)
            info = {**info, **self.page.evaluate("r => AgentRL.step(r)", {"frames": 1})}
        self.moves = list(info["moves"])
        return info

    def step(
        self,
        move: str | None = None,
        *,
        frames: int | None = None,
        state: bool = True,
        text: bool = False,
        capture: Sequence[int] | None = None,
    ) -> dict[str, Any]:
        """``AgentRL.step``: an optional named move, then ``frames`` frames.

        ``frames`` defaults to the game's ``frames_per_step``. Returns the status (``score``, ``reached``,
        ``done``, ``won``, ``error``...) plus ``state``, ``text`` and a ``capture=(width, height)`` frame
        (base64 PNG) as asked.
        """
        request: dict[str, Any] = {"frames": self.spec.frames_per_step if frames is None else frames}
        if move is not None:
            request["move"] = move
        if state:
            request["state"] = True
        if text:
            request["text"] = True
        if capture is not None:
            request["capture"] = [int(capture[0]), int(capture[1])]
        return self.page.evaluate("r => AgentRL.step(r)", request)

    def input_for(self, move: str) -> dict[str, Any] | None:
        """The mouse/keyboard event that plays ``move`` (``AgentRL.inputFor``), or None."""
        return self.page.evaluate("m => AgentRL.inputFor(m)", move)

    def send_input(self, event: Mapping[str, Any] | None) -> None:
        """Dispatch ``{type: click|dblclick|drag|key, ...}`` as real Playwright mouse/keyboard input."""
        if event is None:
            raise ValueError("no input event (the game has no mouse/keyboard input for this move)")
        kind = event.get("type")
        if kind == "click":
            self.page.call(lambda p: p.mouse.click(event["x"], event["y"]))
        elif kind == "dblclick":
            self.page.call(lambda p: p.mouse.dblclick(event["x"], event["y"]))
        elif kind == "drag":

            async def drag(p: Any) -> None:
                await p.mouse.move(event["x1"], event["y1"])
                await p.mouse.down()
                await p.mouse.move(event["x2"], event["y2"], steps=4)
                await p.mouse.up()

            self.page.call(drag)
        elif kind == "key":
            self.page.call(lambda p: p.keyboard.press(event["key"]))
        else:
            raise ValueError(f"unknown input event type {kind!r} (click, dblclick, drag or key)")

    # -- the oracle loop ----------------------------------------------------------------------
    def play(
        self,
        seed: int,
        *,
        options: Mapping[str, Any] | None = None,
        via: Literal["moves", "input"] = "moves",
        max_steps: int | None = None,
        on_step: StepCheck | None = None,
    ) -> tuple[dict[str, Any], int]:
        """Play the game's oracle from ``seed`` until the game is done or after ``max_steps`` steps.

        ``max_steps`` defaults to the game's; the oracle's moves go in by name (``via="moves"``) or as
        each move's mouse/keyboard event (``via="input"``).
        Asserts nothing: returns the last step's output and the number of steps. ``on_step(move, event,
        before, after)`` (``event`` is None for ``via="moves"``) is called after every step, e.g. to check
        that no move was refused.
        """
        if via not in ("moves", "input"):
            raise ValueError(f"via must be 'moves' or 'input', got {via!r}")
        self.start(seed, options)
        out = self.step(frames=0)
        limit = self.spec.max_steps if max_steps is None else max_steps
        steps = 0
        while not out["done"] and steps < limit:
            move = self.spec.oracle(out["state"], self.moves)
            event = None
            if via == "moves":
                after = self.step(move)
            else:
                event = self.input_for(move)
                self.send_input(event)
                after = self.step()
            if on_step is not None:
                on_step(move, event, out, after)
            out, steps = after, steps + 1
        return out, steps

    def oracle_frames(self, seed: int, steps: int, *, size: Sequence[int] = (84, 84)) -> list[str]:
        """SHA-256 digests of the first frame and of the frames after the oracle's first ``steps`` moves.

        Fewer when the game ends first. This is what a determinism test compares across seeds.
        """
        self.start(seed)
        out = self.step(frames=0, capture=size)
        digests = [hashlib.sha256(out["frame"].encode()).hexdigest()]
        for _ in range(steps):
            if out["done"]:
                break
            out = self.step(self.spec.oracle(out["state"], self.moves), capture=size)
            digests.append(hashlib.sha256(out["frame"].encode()).hexdigest())
        return digests

    # -- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the page (safe to call twice)."""
        self.page.close()

    def __enter__(self) -> GamePageDriver:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
