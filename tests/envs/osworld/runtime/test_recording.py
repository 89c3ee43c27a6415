"""ffmpeg is one of the desktop's parts: ``make setup`` installs it, so ``/start_recording`` works after it.

OSWorld's runner calls ``start_recording`` and ``end_recording`` every episode; the recording itself is
tested through OSWorld's requests in ``tests/envs/osworld/test_pythoncontroller_parity.py`` (and through
OSWorld's own ``PythonController`` in ``tests/envs/osworld/test_pythoncontroller_real.py``).
"""

from __future__ import annotations

import re

from agentrl import _system_deps as sd
from agentrl.envs.osworld.runtime.recording import FFMPEG_INSTALL, ffmpeg_argv
from tests.paths import ROOT


def test_ffmpeg_is_a_desktop_part_that_make_setup_installs() -> None:
    makefile = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    desktop = dict(re.findall(r"^(DESKTOP_PACKAGES|FULL_DESKTOP_PACKAGES) := (.*)$", makefile, re.M))
    assert "ffmpeg" in desktop["DESKTOP_PACKAGES"].split()  # `make setup` (system-deps) installs these
    assert "ffmpeg" not in desktop["FULL_DESKTOP_PACKAGES"].split()
    assert "ffmpeg" in sd.DESKTOP_PACKAGES
    (part,) = [part for part in sd.PARTS if part.package == "ffmpeg"]
    assert part.tiers == ("desktop",) and "/start_recording" in part.disables  # its absence is reported


def test_the_recording_command_is_osworlds() -> None:
    argv = ffmpeg_argv(":7", 640, 480, "/tmp/r.mp4")
    assert argv[argv.index("-f") + 1] == "x11grab" and argv[argv.index("-i") + 1] == ":7"
    assert argv[argv.index("-c:v") + 1] == "libx264" and argv[-1] == "/tmp/r.mp4"
    assert FFMPEG_INSTALL.endswith("apt-get install -y ffmpeg")
