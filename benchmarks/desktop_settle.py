"""The desktop's settle: steps per second with the default settings, and proof that no screenshot is taken too soon.

    python benchmarks/desktop_settle.py            # every app installed here (about 5 minutes on 2 cores)
    python benchmarks/desktop_settle.py --apps xterm mousepad --json out.json

Scripted episodes in the desktop's apps (xterm: commands and their output; mousepad: typing, a menu, the
open-file dialog; Chromium: a local page loading, a form, a JavaScript dialog, scrolling; LibreOffice Calc
and Writer where installed: cells, a menu, a dialog). Each runs under three settings:

* ``settle``: the env's defaults (wait until the screen is unchanged and the apps idle for ``quiet_s``,
  at most ``settle_s``; ``agentrl.envs.osworld.runtime.settle``);
* ``pause 0.1 s``: the fixed pause the env used before (``settle_s=0, pause_s=0.1``);
* ``no wait``: neither (``settle_s=0, pause_s=0``), the env's own cost and the floor.

After every step the observation the agent got is compared, pixel for pixel, with the screen one second
after the action (what a 1 s pause would have given): a step is "equal" when they are the same image,
otherwise the differing pixels are counted and the step is named. Steps per second are the steps over the
wall time of ``env.step`` alone (the comparison's second of waiting is not counted). Timings on a shared
2-core machine are noisy: the ratio of settings measured in one run is what to compare.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["EPISODES", "Episode", "main", "run_episode"]

#: a local page: a form, a link to a longer page, a JavaScript dialog
PAGE = """<!doctype html><html><head><title>Settle</title></head><body style="font-family:sans-serif">
<h1>Registration</h1><form><label>Name <input id="name"></label><br><label>Email <input id="email"></label><br>
<select id="level"><option>Beginner</option><option>Advanced</option></select>
<button type="button" onclick="alert('Saved ' + document.getElementById('name').value)">Save</button></form>
<p><a href="long.html">A longer page</a></p></body></html>"""
LONG_PAGE = "<!doctype html><html><body>" + "".join(f"<p>Paragraph {i}: " + "text " * 40 + "</p>" for i in range(200))
LONG_PAGE += "</body></html>"


@dataclass(frozen=True)
class Episode:
    """An app, the command that starts it, the files it needs and the agent's actions (pyautogui code)."""

    name: str
    command: list[str]
    actions: list[str]
    needs: str
    files: tuple[tuple[str, str], ...] = ()


EPISODES = [
    Episode("xterm", ["xterm"], [
        "pyautogui.write('echo hello world')", "pyautogui.press('enter')",
        "pyautogui.write('ls -la /etc | head -40')", "pyautogui.press('enter')",
        "pyautogui.write('seq 1 200')", "pyautogui.press('enter')",
        "pyautogui.hotkey('ctrl', 'l')", "pyautogui.write('cat ~/notes.txt')", "pyautogui.press('enter')",
        "pyautogui.write('clear')", "pyautogui.press('enter')",
    ], "xterm", (("notes.txt", "one\ntwo\nthree\n"),)),
    Episode("mousepad", ["mousepad", "notes.txt"], [
        "pyautogui.hotkey('ctrl', 'end')", "pyautogui.write('A new line of text')", "pyautogui.press('enter')",
        "pyautogui.write('and another one')", "pyautogui.hotkey('ctrl', 'a')", "pyautogui.press('right')",
        "pyautogui.hotkey('alt', 'f')", "pyautogui.press('escape')", "pyautogui.hotkey('ctrl', 'o')",
        "pyautogui.press('escape')", "pyautogui.hotkey('ctrl', 'f')", "pyautogui.write('line')",
        "pyautogui.press('escape')", "pyautogui.click(300, 300)",
    ], "mousepad", (("notes.txt", "one\ntwo\nthree\n"),)),
    Episode("chromium", ["chromium", "--no-first-run", "site/form.html"], [
        "pyautogui.press('tab')", "pyautogui.write('Maria Gonzalez')", "pyautogui.press('tab')",
        "pyautogui.write('maria@example.com')", "pyautogui.press('tab')", "pyautogui.press('down')",
        "pyautogui.press('tab')", "pyautogui.press('enter')", "pyautogui.press('enter')",
        "pyautogui.hotkey('ctrl', 'l')",
        "pyautogui.write('file://' + __import__('os').path.expanduser('~/site/long.html'))",
        "pyautogui.press('enter')", "pyautogui.scroll(-10)", "pyautogui.press('end')",
        "pyautogui.hotkey('alt', 'left')",
    ], "chromium", (("site/form.html", PAGE), ("site/long.html", LONG_PAGE))),
    Episode("libreoffice-calc", ["libreoffice", "--calc", "--norestore"], [
        "pyautogui.write('Name')", "pyautogui.press('tab')", "pyautogui.write('Score')", "pyautogui.press('enter')",
        "pyautogui.write('Ann')", "pyautogui.press('tab')", "pyautogui.write('34')", "pyautogui.press('enter')",
        "pyautogui.write('=SUM(B2:B2)')", "pyautogui.press('enter')", "pyautogui.hotkey('alt', 'o')",
        "pyautogui.press('escape')", "pyautogui.hotkey('ctrl', '1')", "pyautogui.press('escape')",
    ], "soffice"),
    Episode("libreoffice-writer", ["libreoffice", "--writer", "--norestore"], [
        "pyautogui.write('A heading')", "pyautogui.press('enter')", "pyautogui.write('Some body text here.')",
        "pyautogui.hotkey('ctrl', 'a')", "pyautogui.hotkey('ctrl', 'b')", "pyautogui.press('end')",
        "pyautogui.hotkey('alt', 'f')", "pyautogui.press('escape')", "pyautogui.hotkey('ctrl', 'h')",
        "pyautogui.press('escape')",
    ], "soffice"),
]

SETTINGS: dict[str, dict[str, Any]] = {
    "settle": {},
    "pause 0.1 s": {"settle_s": 0.0, "pause_s": 0.1},
    "no wait": {"settle_s": 0.0, "pause_s": 0.0},
}


def _task(episode: Episode) -> Any:
    from agentrl.envs.osworld.tasks.format import OSWorldTask

    config: list[dict[str, Any]] = []
    if episode.files:
        config.append({"type": "execute", "parameters": {"command": ["python3", "-c", _writer(episode.files)]}})
    config.append({"type": "launch", "parameters": {"command": episode.command}})
    config.append({"type": "sleep", "parameters": {"seconds": 3.0 if "libreoffice" in episode.name else 1.5}})
    return OSWorldTask.from_dict(
        {"id": f"settle-{episode.name}", "instruction": "a scripted episode", "config": config,
         "evaluator": {"func": "infeasible"}}
    )


def _writer(files: tuple[tuple[str, str], ...]) -> str:
    lines = ["import os"]
    for path, text in files:
        lines.append(f"p = os.path.expanduser({'~/' + path!r}); os.makedirs(os.path.dirname(p), exist_ok=True)")
        lines.append(f"open(p, 'w').write({text!r})")
    return "\n".join(lines)


def run_episode(episode: Episode, settings: dict[str, Any], reference_s: float = 1.0) -> dict[str, Any]:
    """Play the episode's actions; each observation against the screen ``reference_s`` after the action."""
    import numpy as np

    from agentrl.envs.osworld.env import OSWorldEnv

    env = OSWorldEnv(tasks=[_task(episode)], task_id=f"settle-{episode.name}", max_steps=len(episode.actions) + 1,
                     **settings)
    rows = []
    try:
        env.reset(seed=0)
        for action in episode.actions:
            start = time.perf_counter()
            observation, _, _, _, info = env.step(action)
            took = time.perf_counter() - start
            time.sleep(max(0.0, reference_s - (time.perf_counter() - start)))
            reference = env.client.screenshot_array()
            differ = int(np.any(observation["screenshot"] != reference, axis=2).sum())
            rows.append({"action": action, "step_s": round(took, 4), "differing_pixels": differ,
                         "settle": env.last_settle, "error": info.get("action_error") or info.get("tool_error")})
    finally:
        env.close()
    wall = sum(r["step_s"] for r in rows)
    return {
        "episode": episode.name,
        "steps": len(rows),
        "steps_per_s": round(len(rows) / wall, 1),
        "equal": sum(r["differing_pixels"] == 0 for r in rows),
        "unequal": [{"action": r["action"], "differing_pixels": r["differing_pixels"]} for r in rows
                    if r["differing_pixels"]],
        "settle_max_s": max((r["settle"] or {}).get("waited_s", 0.0) for r in rows),
        "errors": [r["error"] for r in rows if r["error"]],
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    """``python benchmarks/desktop_settle.py``: the table, and the figures as JSON with ``--json``."""
    parser = argparse.ArgumentParser(prog="python benchmarks/desktop_settle.py", description=__doc__.splitlines()[0])
    parser.add_argument("--apps", nargs="+", default=[e.name for e in EPISODES], choices=[e.name for e in EPISODES])
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--json", default=None, help="write the figures here")
    args = parser.parse_args(argv)
    if shutil.which("Xvfb") is None:
        print("needs Xvfb and the desktop's apps: make setup (as root), or see python3 agentrl/_system_deps.py check")
        return 2
    result: dict[str, Any] = {"command": "python benchmarks/desktop_settle.py " + " ".join(argv or sys.argv[1:]),
                              "settings": {}, "skipped": {}}
    for name in args.settings:
        episodes = []
        for episode in EPISODES:
            if episode.name not in args.apps:
                continue
            if shutil.which(episode.needs) is None:
                result["skipped"][episode.name] = f"{episode.needs} is not installed (make desktop-full)"
                continue
            row = run_episode(episode, SETTINGS[name])
            episodes.append(row)
            print(f"{name:12s} {row['episode']:20s} {row['steps_per_s']:5.1f} steps/s  "
                  f"{row['equal']}/{row['steps']} equal to the 1 s screen  "
                  f"longest settle {row['settle_max_s']:.2f} s  {row['unequal'] or ''}", flush=True)
        steps = sum(e["steps"] for e in episodes)
        wall = sum(r["step_s"] for e in episodes for r in e["rows"])
        result["settings"][name] = {
            "env_kwargs": SETTINGS[name],
            "steps": steps,
            "steps_per_s": round(steps / wall, 1) if wall else None,
            "equal": sum(e["equal"] for e in episodes),
            "episodes": episodes,
        }
        summary = result["settings"][name]
        print(f"{name:12s} {'all':20s} {summary['steps_per_s']} steps/s, {summary['equal']}/{steps} equal", flush=True)
    for name, why in result["skipped"].items():
        print(f"skipped {name}: {why}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
