"""The project's own Flash games, written as .swf files with :mod:`agentrl.envs.games.swf.writer`.

Each game is an AVM1 movie plus a milestones file (JSON) that the ``swf`` browser game reads:

``{"size": [W, H], "milestones": [{"name", "region": [x, y, w, h], "color": [r, g, b], "tolerance"}],
"win": "<milestone name>", "actions": {"<move name>": [x, y]}, "solution": ["<move name>", ...]}``

A milestone is reached when the mean colour of its region (movie pixels) is within ``tolerance`` of
``color`` (the largest per-channel difference); ``win`` names the milestone that wins the game;
``actions`` are the named clicks (the discrete moves) and ``solution`` a winning sequence of them.

- ``clicker``: a blue button; each click shows one more green bar at the top; the third click goes to
  the frame with a large green WIN rectangle.
- ``keydoor``: a yellow key and a brown door. Clicking the door without the key does nothing; clicking
  the key picks it up (it moves to the grey inventory slot); then clicking the door wins.

Third-party games (:data:`THIRDPARTY`) are real Flash movies shipped as their authors built them, in
``assets/games/thirdparty/<name>.swf`` with ``<name>.json`` (the milestones, same format) and
``<name>.LICENSE`` (licence, source, commit, author). They are played like the own games, e.g.
``gym.make("AgentRL/FlashGame-SWF-v0", game_options=game_options("evader"))``:

- ``evader``: "Evader" (2007, alpha 0.12) by Maurycy Zarzycki, code MIT, graphics CC0, an AVM1 movie
  (520x520). Its title screen's "PRESS HERE TO CONTINUE" button shows the level (milestones: the
  floor tiles, the red player square); the level itself is played with the numpad (the env's
  ``mouse_keyboard`` action mode), which the named moves do not cover.

:func:`build_games` writes the files (at build or test time); the bytes are deterministic.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from agentrl.envs.games.swf.writer import Asm, Movie

__all__ = [
    "GAMES",
    "THIRDPARTY",
    "build_games",
    "clicker",
    "game_bytes",
    "game_options",
    "games_dir",
    "keydoor",
    "milestones",
    "user_dir",
]

W, H = 240, 180
BACKGROUND = (235, 235, 235)
GREEN = (0, 190, 60)
BLUE = (40, 90, 220)
YELLOW = (245, 205, 20)
BROWN = (130, 80, 30)
GREY = (150, 150, 150)


def _region(x: int, y: int, w: int, h: int, margin: int = 4) -> list[int]:
    return [x + margin, y + margin, w - 2 * margin, h - 2 * margin]


def _milestone(name: str, box: tuple[int, int, int, int], color: tuple[int, int, int]) -> dict[str, Any]:
    return {"name": name, "region": _region(*box), "color": list(color), "tolerance": 40}


# -- clicker --------------------------------------------------------------------------------
CLICKER_BUTTON = (80, 110, 80, 40)
CLICKER_BARS = [(30, 20, 50, 20), (95, 20, 50, 20), (160, 20, 50, 20)]
CLICKER_WIN = (20, 60, 200, 110)


def clicker() -> tuple[bytes, dict[str, Any]]:
    """The clicker game: its .swf bytes and milestones."""
    m = Movie(W, H, frame_rate=30, background=BACKGROUND)
    bx, by, bw, bh = CLICKER_BUTTON
    face = m.rect(bw, bh, BLUE)
    bars = [m.rect(w, h, GREEN) for (_, _, w, h) in CLICKER_BARS]
    win = m.rect(CLICKER_WIN[2], CLICKER_WIN[3], GREEN)
    # on release: count += 1, then go to frame `count` (bars shown) -- frame 3 is the WIN frame
    code = Asm().increment("count")
    for k in (1, 2, 3):
        code.push("count").get_variable().push(k).equals().if_true(f"f{k}")
    code.jump("end")
    for k in (1, 2, 3):
        code.label(f"f{k}").goto_frame(k).jump("end")
    code.label("end")
    button = m.button(face, code)
    # frame 1: the button, no bars
    m.place(button, depth=1, x=bx, y=by, name="button")
    m.action(Asm().set("count", 0).stop())
    m.show_frame()
    # frames 2, 3: one more bar each
    for k in (0, 1):
        x, y, _, _ = CLICKER_BARS[k]
        m.place(bars[k], depth=10 + k, x=x, y=y)
        m.action(Asm().stop())
        m.show_frame()
    # frame 4: the third bar, the button gone, the WIN rectangle
    x, y, _, _ = CLICKER_BARS[2]
    m.place(bars[2], depth=12, x=x, y=y)
    m.remove(1)
    m.place(win, depth=20, x=CLICKER_WIN[0], y=CLICKER_WIN[1], name="win")
    m.action(Asm().stop())
    m.show_frame()
    spec = {
        "size": [W, H],
        "milestones": [_milestone(f"bar {k + 1}", CLICKER_BARS[k], GREEN) for k in range(3)]
        + [_milestone("win", CLICKER_WIN, GREEN)],
        "win": "win",
        "actions": {"click button": [bx + bw // 2, by + bh // 2]},
        "solution": ["click button"] * 3,
    }
    return m.to_bytes(), spec


# -- keydoor --------------------------------------------------------------------------------
KEY = (40, 80, 40, 24)
DOOR = (150, 30, 50, 90)
SLOT = (186, 130, 44, 40)
SLOT_KEY = (192, 138, 32, 24)
KEYDOOR_WIN = (20, 20, 160, 100)


def keydoor() -> tuple[bytes, dict[str, Any]]:
    """The key-and-door game: its .swf bytes and milestones."""
    m = Movie(W, H, frame_rate=30, background=BACKGROUND)
    slot = m.rect(SLOT[2], SLOT[3], GREY)
    key_face = m.rect(KEY[2], KEY[3], YELLOW)
    held_key = m.rect(SLOT_KEY[2], SLOT_KEY[3], YELLOW)
    door_face = m.rect(DOOR[2], DOOR[3], BROWN)
    win = m.rect(KEYDOOR_WIN[2], KEYDOOR_WIN[3], GREEN)
    key = m.button(key_face, Asm().set("hasKey", 1).goto_frame(1))
    # the door opens only with the key: if (!hasKey) skip; else go to the WIN frame
    door = m.button(
        door_face,
        Asm()
        .push("hasKey")
        .get_variable()
        .not_()
        .if_true("locked")
        .goto_frame(2)
        .jump("end")
        .label("locked")
        .increment("locked_tries")
        .label("end"),
    )
    # frame 1: slot, key, door
    m.place(slot, depth=1, x=SLOT[0], y=SLOT[1])
    m.place(key, depth=2, x=KEY[0], y=KEY[1], name="key")
    m.place(door, depth=3, x=DOOR[0], y=DOOR[1], name="door")
    m.action(Asm().set("hasKey", 0).set("locked_tries", 0).stop())
    m.show_frame()
    # frame 2: the key is in the inventory slot
    m.remove(2)
    m.place(held_key, depth=4, x=SLOT_KEY[0], y=SLOT_KEY[1])
    m.action(Asm().stop())
    m.show_frame()
    # frame 3: the door is open: WIN
    m.remove(3)
    m.place(win, depth=20, x=KEYDOOR_WIN[0], y=KEYDOOR_WIN[1], name="win")
    m.action(Asm().stop())
    m.show_frame()
    spec = {
        "size": [W, H],
        "milestones": [_milestone("key picked up", SLOT_KEY, YELLOW), _milestone("win", KEYDOOR_WIN, GREEN)],
        "win": "win",
        "actions": {
            "click key": [KEY[0] + KEY[2] // 2, KEY[1] + KEY[3] // 2],
            "click door": [DOOR[0] + DOOR[2] // 2, DOOR[1] + DOOR[3] // 2],
        },
        "solution": ["click key", "click door"],
    }
    return m.to_bytes(), spec


GAMES: dict[str, Callable[[], tuple[bytes, dict[str, Any]]]] = {"clicker": clicker, "keydoor": keydoor}


#: third-party movies shipped unchanged (see each ``<name>.LICENSE``) with their milestones JSON
THIRDPARTY_DIR = Path(__file__).resolve().parent.parent / "assets" / "games" / "thirdparty"
THIRDPARTY: tuple[str, ...] = ("evader",)


def _thirdparty(name: str) -> tuple[bytes, dict[str, Any]]:
    spec = json.loads((THIRDPARTY_DIR / f"{name}.json").read_text())
    return (THIRDPARTY_DIR / f"{name}.swf").read_bytes(), spec


def game_bytes(name: str) -> bytes:
    """The .swf bytes of a shipped game (own or third-party)."""
    return _thirdparty(name)[0] if name in THIRDPARTY else GAMES[name]()[0]


def milestones(name: str) -> dict[str, Any]:
    """The milestones spec of a shipped game (own or third-party)."""
    return _thirdparty(name)[1] if name in THIRDPARTY else GAMES[name]()[1]


def game_options(name: str, url_prefix: str = "/swf") -> dict[str, Any]:
    """The ``swf`` browser game's options for a shipped game: ``swf_url`` plus its milestones spec.

    >>> game_options("keydoor")["swf_url"], game_options("keydoor")["solution"]
    ('/swf/keydoor.swf', ['click key', 'click door'])
    >>> game_options("evader")["win"]
    'player on the board'
    """
    return {"swf_url": f"{url_prefix.rstrip('/')}/{name}.swf", **milestones(name)}


def _write_if_changed(path: Path, data: bytes) -> None:
    if not path.is_file() or path.read_bytes() != data:
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)


CACHE = Path("~/.cache/agentrl/swf")


def games_dir() -> Path:
    """The shipped games, built into ``~/.cache/agentrl/swf`` (rewritten only when they change)."""
    out = CACHE.expanduser()
    build_games(out)
    return out


def user_dir() -> Path:
    """The folder of the user's own movies: ``$AGENTRL_SWF_DIR`` (else the shipped games' folder)."""
    override = os.environ.get("AGENTRL_SWF_DIR")
    return Path(override).expanduser() if override else games_dir()


def build_games(out_dir: str | Path) -> dict[str, tuple[Path, Path]]:
    """Write ``<name>.swf`` and ``<name>.json`` for every shipped game into ``out_dir`` (only if changed).

    The third-party movies (:data:`THIRDPARTY`) are copied there too. Returns
    ``{name: (swf_path, milestones_path)}``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, tuple[Path, Path]] = {}
    makers: dict[str, Callable[[], tuple[bytes, dict[str, Any]]]] = {
        **GAMES,
        **{name: partial(_thirdparty, name) for name in THIRDPARTY},
    }
    for name, make in makers.items():
        data, spec = make()
        swf, meta = out / f"{name}.swf", out / f"{name}.json"
        _write_if_changed(swf, data)
        _write_if_changed(meta, (json.dumps(spec, indent=1) + "\n").encode())
        written[name] = (swf, meta)
    return written
