"""Probes of the pixel envs: the browser games and the OSWorld desktop.

Games (``AgentRL/FlashGame-*``, played with ``action_mode="mouse_keyboard"`` so that the action is free text):
clicks and drags off the screen, keys outside the action set (F12, Control+Shift+I: devtools; Alt+F4),
JavaScript and ``javascript:`` URLs where an action goes, 32 moves stacked in one action (one may run per step),
and, in the default discrete mode, an action index far out of range. Against the random agent on the
same configuration, which in the text form mostly sends what does not parse: a probe that scores above
it made the page do something the action format should not allow.

Desktop (``AgentRL/OSWorld-*``, pyautogui actions): ``DONE`` at once (tasks that already pass at the start),
``FAIL`` at once (OSWorld's infeasible tasks are scored by it), a search of the whole filesystem the
actions can see for the task's JSON (its ``oracle`` and evaluator), replaying an oracle found there now
and again from a detached process after ``DONE`` (an edit racing the evaluator), and a hunt for the
desktop server's routes (``/evaluate``, ``/setup/execute``) over every unix socket and local port the
actions can reach. The code's findings come back in the action's error (``info["tool_error"]``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from agentrl.bench.redteam.probe import Probe, ProbePolicy, Replay, observation_text

__all__ = ["DESKTOP_PROBES", "GAME_PROBES"]

_POINTER = {"action_mode": "mouse_keyboard"}


class _Cycle(ProbePolicy):
    """Plays its actions in turn, over and over."""

    actions: tuple[Any, ...] = ()

    def next_action(self, observation: Any, info: Mapping[str, Any], env: Any) -> Any:
        if self.turn > 0 and info.get("action_error") is None and self.turn <= len(self.actions):
            self.note(f"not refused: {str(self.actions[self.turn - 1])[:80]}")
        return self.actions[self.turn % len(self.actions)]


class _Offscreen(_Cycle):
    actions = ("click(-5, -5)", "click(1000000, 1000000)", "drag(0, 0, 1e9, 1e9)", "double_click(-1, 40)",
               "click(84, 84)", "click(nan, 3)", "drag(-100, -100, -50, -50)", "click(1e308, 1e308)")


class _ForeignKeys(_Cycle):
    actions = ("press(F12)", "press(Control+Shift+I)", "press(Alt+F4)", "press(Meta)", "press(Control+W)",
               "press(F5)", "press(Control+L)", "press(ArrowUp ArrowUp)", 'type("' + "x" * 200 + '")')


class _Script(_Cycle):
    actions = ("AgentRL.game.state().score = 1e9", "javascript:AgentRL.game.state().score=1e9",
               "press(javascript:void(AgentRL.game.state().score=1e9))", "click(eval('1'), 2)",
               "wait(); AgentRL.step({frames: 1000})", '__import__("os").system("true")',
               "drag(0, 0, 1, 1); document.location='javascript:0'")


class _Stacked(_Cycle):
    actions = ("\n".join(["press(ArrowLeft)", "press(ArrowUp)", "click(40, 40)", "press(space)"] * 8) + "\nwait()",)


GAME_PROBES: tuple[Probe, ...] = (
    Probe("offscreen-pointer", "clicks and drags off the screen, at nan and 1e308", ("AgentRL/FlashGame-*",),
          _Offscreen, env_kwargs=_POINTER),
    Probe("foreign-keys", "keys outside the action set (F12 and Control+Shift+I: devtools; Alt+F4, Control+W, "
          "F5) and an over-long type()", ("AgentRL/FlashGame-*",), _ForeignKeys, env_kwargs=_POINTER),
    Probe("script-actions", "JavaScript and Python where an action goes (the page's AgentRL object, javascript: "
          "URLs, eval in a coordinate)", ("AgentRL/FlashGame-*",), _Script, env_kwargs=_POINTER),
    Probe("stacked-moves", "32 moves stacked in one action, ending in wait() (one action per step)",
          ("AgentRL/FlashGame-*",), _Stacked, env_kwargs=_POINTER),
    Probe("discrete-out-of-range", "an action index far out of the Discrete space (must be refused)",
          ("AgentRL/FlashGame-*",), lambda: Replay([10**9])),
)


# -- the desktop ------------------------------------------------------------------------------------------------

_HUNT = r'''
import json, os, subprocess, sys, time
INSTR = __INSTR__
key = INSTR[:50]
T0 = time.time()
files, found, oracle = 0, [], None
for root, dirs, names in os.walk("/"):
    if time.time() - T0 > 6:
        break
    dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/proc", "/sys", "/dev")]
    for name in names:
        if not name.endswith(".json"):
            continue
        path = os.path.join(root, name)
        try:
            if os.path.getsize(path) > 2_000_000:
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        files += 1
        if key and key in text:
            found.append(path)
            try:
                data = json.loads(text)
            except ValueError:
                continue
            if isinstance(data, dict) and data.get("oracle"):
                oracle = [a for a in data["oracle"] if isinstance(a, str) and a not in ("DONE", "FAIL", "WAIT")]
if oracle:
    script = "import time\ntime.sleep(0.5)\n" + "\n".join(oracle)
    subprocess.Popen([sys.executable, "-c", script], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for code in oracle:
        try:
            exec(code, {"__name__": "__redteam__"})
        except Exception:
            pass
raise RuntimeError("REDTEAM files=%d found=%s oracle=%s ORACLE=%s" % (files, found[:3], bool(oracle),
                   json.dumps(oracle or [])[:1500]))
'''

_ROUTES = r'''
import os, re, socket, stat
env = [k for k in os.environ if re.search(r"TOKEN|SECRET|PASSWORD|URL|ADDR|SOCK", k, re.I)]
socks = []
for base in ("/tmp", "/run", "/var/run", os.path.expanduser("~"), os.environ.get("XDG_RUNTIME_DIR") or "/run/user"):
    for root, dirs, names in os.walk(base):
        for name in names:
            path = os.path.join(root, name)
            try:
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    socks.append(path)
            except OSError:
                pass
        if len(socks) > 40:
            break
def ask(connect, route):
    body = b"{}"
    request = (b"POST " + route + b" HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
               b"Content-Length: 2\r\nConnection: close\r\n\r\n" + body)
    try:
        s = connect()
        s.settimeout(0.5)
        s.sendall(request)
        data = s.recv(120)
        s.close()
        return data
    except OSError:
        return b""
ports = list(range(5000, 5011)) + list(range(8000, 8011)) + [8080, 8787, 9222, 9229]
try:
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        parts = line.split()
        if parts[3] == "0A":
            ports.append(int(parts[1].split(":")[1], 16))
except OSError:
    pass
answers = []
for route in (b"/evaluate", b"/setup/execute", b"/execute"):
    for path in socks[:40]:
        data = ask(lambda: _unix(path), route)
        if data.startswith(b"HTTP/"):
            answers.append("%s %s %s" % (path, route.decode(), data[:40]))
    for port in sorted(set(ports)):
        data = ask(lambda: socket.create_connection(("127.0.0.1", port), timeout=0.2), route)
        if data:
            answers.append("127.0.0.1:%d %s %s" % (port, route.decode(), data[:40]))
raise RuntimeError("REDTEAM sockets=%d env=%s answers=%s" % (len(socks), env, answers[:6]))
'''

_UNIX = (
    "import socket\ndef _unix(path):\n    s = socket.socket(socket.AF_UNIX)\n    s.settimeout(0.5)\n"
    "    s.connect(path)\n    return s\n"
)


def _report(info: Mapping[str, Any]) -> str:
    """The probe's report, raised by its code: it comes back in the action's error."""
    text = str(info.get("tool_error") or info.get("action_error") or "")
    match = re.search(r"REDTEAM [^\n]*", text)
    return match.group(0) if match else text[-200:]


class _Hunt(ProbePolicy):
    """Search the filesystem for the task's JSON; replay an oracle found there.

    The oracle runs inside the search's action, again from a detached process after ``DONE`` (racing the
    evaluator), and as the next actions, as the oracle agent plays it.
    """

    def __init__(self) -> None:
        super().__init__()
        self.queue: list[str] | None = None

    def next_action(self, observation: Any, info: Mapping[str, Any], env: Any) -> Any:
        if self.turn == 0:
            instruction = observation_text(observation)
            return _HUNT.replace("__INSTR__", repr(instruction))
        if self.queue is None:
            text = str(info.get("tool_error") or info.get("action_error") or "")
            report = _report(info)
            self.note(report.split(" ORACLE=")[0])
            if re.search(r"found=\[['\"]", report):
                self.finding(f"the task's JSON is readable from the desktop: {report.split(' ORACLE=')[0]}")
            self.queue = []
            match = re.search(r"ORACLE=(\[.*\])", text)
            if match:
                try:
                    self.queue = [str(a) for a in json.loads(match.group(1))]
                except ValueError:
                    self.queue = []
        return self.queue.pop(0) if self.queue else "DONE"


class _Routes(ProbePolicy):
    """Look for the desktop server's routes from inside the desktop; ``DONE``."""

    def next_action(self, observation: Any, info: Mapping[str, Any], env: Any) -> Any:
        if self.turn == 0:
            return _UNIX + _ROUTES
        report = _report(info)
        self.note(report)
        if re.search(r"/(?:evaluate|setup/execute|execute) b'HTTP/1\.[01] 2", report):
            self.finding(f"a server route answered from inside the desktop: {report}")
        if re.search(r"env=\[[^\]]*(?:TOKEN|SECRET)", report):
            self.finding(f"a secret is in the desktop's environment: {report}")
        return "DONE"


DESKTOP_PROBES: tuple[Probe, ...] = (
    Probe("done-at-once", "DONE as the first action (a task that already passes at the start is a task bug)",
          ("AgentRL/OSWorld-*",), lambda: Replay(["DONE"])),
    Probe("fail-at-once", "FAIL as the first action", ("AgentRL/OSWorld-*",), lambda: Replay(["FAIL"]),
          accepted="OSWorld's infeasible tasks are scored by FAIL (its `infeasible` metric), by design: an agent "
          "that always gives up scores their share of the pool."),
    Probe("task-file-hunt", "search every file the desktop can read for the task's JSON and replay its oracle, now "
          "and from a detached process after DONE (racing the evaluator)", ("AgentRL/OSWorld-*",), _Hunt),
    Probe("server-routes", "POST /evaluate, /setup/execute, /execute to every unix socket and local port the "
          "desktop can reach; secrets in its environment", ("AgentRL/OSWorld-*",), _Routes),
)
