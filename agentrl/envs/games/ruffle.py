"""Ruffle, the Flash Player emulator (Rust/WebAssembly), for the Flash game env.

:func:`ruffle_dir` finds the npm package ``@ruffle-rs/ruffle`` (pinned to :data:`RUFFLE_VERSION`):
``$AGENTRL_RUFFLE_DIR`` if set, else ``~/.cache/agentrl/ruffle/node_modules/@ruffle-rs/ruffle``,
installed there with npm on first use. The env serves that folder at ``http://agentrl.games/ruffle/``
and the movie's folder at ``http://agentrl.games/swf/``; the ``swf`` browser game
(``assets/games/swf.js``) puts a Ruffle player with the canvas renderer on the page, runs it under the
runtime's virtual clock, reads the movie's pixels from Ruffle's canvas and scores milestones that are
pixel-region templates (see :mod:`agentrl.envs.games.swf.games` for the JSON format).

Running FlashAdventure's games from a local Flashpoint copy
-----------------------------------------------------------
FlashAdventure (Ahn et al., 2025) evaluates agents on classic point-and-click Flash adventures. The
games are not redistributed here; BlueMaxima's Flashpoint archive has them:

1. Get Flashpoint (Infinity downloads games on demand; Ultimate has them all). Find the game in its
   launcher and play it once, so its files are on disk. The .swf is then under
   ``Flashpoint/Data/Games/`` (zipped game data: unzip the game's ``.zip``, the .swf is inside under
   ``content/<host>/<path>``) or, in older copies, ``Flashpoint/Legacy/htdocs/<host>/<path>/<game>.swf``.
   The launcher's game page shows the "Application Path"/"Launch Command" with that host/path.
2. Write a milestones JSON next to it (same format as the shipped games): ``size`` (the movie's stage
   size: open it once in the env with ``render_mode="rgb_array"``, or read it with
   ``agentrl.envs.games.ruffle.swf_size``), ``milestones`` (name, ``region`` [x, y, w, h] in movie
   pixels, ``color`` [r, g, b], ``tolerance``): regions whose mean colour shows progress (an item in the
   inventory bar, a room's background, an ending screen), ``win`` (the final milestone), and optionally
   ``actions`` (named clicks ``{"name": [x, y]}``) and ``solution`` for a scripted walkthrough.
   Without ``actions`` the game is played with the mouse (the env's mouse action mode).
3. Put the .swf in a folder, point ``AGENTRL_SWF_DIR`` at it (the env serves it at ``/user/``) and make
   the env: ``gym.make("AgentRL/FlashGame-SWF-v0", game_options={"swf_url": "/user/<game>.swf",
   "actions": {}, "solution": [], **json.load(open("<game>.json"))})`` (the options are merged over the
   shipped clicker's, hence the explicit empty ``actions``/``solution`` when the JSON has none).
   Movies that load further files by relative URL need them in the same folder (keep Flashpoint's
   ``content/<host>/`` tree and point ``AGENTRL_SWF_DIR`` at it). AVM2 (ActionScript 3) games run as far
   as Ruffle supports them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zlib
from pathlib import Path

from agentrl.core.errors import DependencyNotInstalled

__all__ = ["RUFFLE_PACKAGE", "RUFFLE_VERSION", "install_command", "ruffle_dir", "swf_size"]

RUFFLE_VERSION = "0.6.0"
RUFFLE_PACKAGE = f"@ruffle-rs/ruffle@{RUFFLE_VERSION}"
CACHE = Path("~/.cache/agentrl/ruffle")


def install_command(prefix: Path | None = None) -> str:
    """The npm command that installs the pinned Ruffle into ``prefix`` (default: the cache)."""
    return f"npm install --prefix {prefix or CACHE} {RUFFLE_PACKAGE}"


def _installed(path: Path) -> bool:
    return (path / "ruffle.js").is_file() and any(path.glob("*.wasm"))


def ruffle_dir(install: bool = True) -> Path:
    """The folder of Ruffle's web package (``ruffle.js`` and its wasm), installing it when missing.

    ``$AGENTRL_RUFFLE_DIR`` wins; otherwise the pinned version lives in ``~/.cache/agentrl/ruffle``.
    Raises :class:`DependencyNotInstalled` (with the exact command) when it is missing and npm cannot
    install it.
    """
    override = os.environ.get("AGENTRL_RUFFLE_DIR")
    if override:
        path = Path(override).expanduser()
        if not _installed(path):
            raise DependencyNotInstalled(
                "ruffle", command=f"{install_command()}  (AGENTRL_RUFFLE_DIR={path} has no ruffle.js/*.wasm)"
            )
        return path
    prefix = CACHE.expanduser()
    path = prefix / "node_modules" / "@ruffle-rs" / "ruffle"
    if _installed(path) and _version(path) == RUFFLE_VERSION:
        return path
    npm = shutil.which("npm")
    if not install or npm is None:
        raise DependencyNotInstalled("ruffle", command=install_command(prefix))
    prefix.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", RUFFLE_PACKAGE],
            check=True,
            capture_output=True,
            timeout=600,
        )
    except subprocess.CalledProcessError as exc:  # say npm's own reason (a proxy's certificate, no network...)
        reason = " | ".join((exc.stderr or b"").decode(errors="replace").strip().splitlines()[-3:])
        raise DependencyNotInstalled(
            "ruffle", command=f"{install_command(prefix)}  (npm failed: {reason or f'exit {exc.returncode}'})"
        ) from exc
    except (OSError, subprocess.SubprocessError) as exc:
        raise DependencyNotInstalled("ruffle", command=f"{install_command(prefix)}  ({exc})") from exc
    if not _installed(path):
        raise DependencyNotInstalled("ruffle", command=install_command(prefix))
    return path


def _version(path: Path) -> str | None:
    try:
        return str(json.loads((path / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def swf_size(data: bytes) -> tuple[int, int]:
    """The stage size in pixels of a .swf (``FWS`` or zlib-compressed ``CWS``).

    >>> from agentrl.envs.games.swf.games import game_bytes
    >>> swf_size(game_bytes("clicker"))
    (240, 180)
    """
    if data[:3] == b"CWS":
        body = zlib.decompressobj().decompress(data[8:], 64)
    elif data[:3] == b"FWS":
        body = data[8:]
    else:
        raise ValueError("not an uncompressed or zlib-compressed .swf (LZMA 'ZWS' is not read here)")
    nbits = body[0] >> 3
    bits = int.from_bytes(body[: (5 + 4 * nbits + 7) // 8], "big")
    total = ((5 + 4 * nbits + 7) // 8) * 8
    fields = []
    for i in range(4):
        shift = total - 5 - (i + 1) * nbits
        v = (bits >> shift) & ((1 << nbits) - 1)
        if v >> (nbits - 1):
            v -= 1 << nbits
        fields.append(v)
    xmin, xmax, ymin, ymax = fields
    return (xmax - xmin) // 20, (ymax - ymin) // 20
