"""Screen recording of one desktop with ffmpeg's ``x11grab``, run in the desktop's sandbox.

OSWorld's VM server records with ``ffmpeg -f x11grab ... -c:v libx264 -r 30 /tmp/recording.mp4`` on
``POST /start_recording`` and answers the MP4 on ``POST /end_recording`` (ffmpeg stopped with SIGINT,
so it writes the file's index). :class:`ScreenRecorder` does the same for a
:class:`~agentrl.envs.osworld.runtime.desktop.DesktopSession`: ffmpeg runs in the desktop's sandbox (it sees
the X display and the sandbox's private ``/tmp``, where the file is written) and dies with the
desktop's reset like any of its processes.

ffmpeg is one of the desktop's system parts (``make setup`` installs it with the desktop's packages:
OSWorld's runner records every episode); where it is missing :meth:`ScreenRecorder.start` raises
:class:`RecordingError` naming ``apt-get install -y ffmpeg``.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import tempfile
import threading
import uuid
from typing import IO, Any

from agentrl.core.errors import AgentRLError

__all__ = ["FFMPEG_INSTALL", "RecordingError", "ScreenRecorder", "ffmpeg_argv"]

FFMPEG_INSTALL = "sudo apt-get install -y ffmpeg"
START_WAIT_S = 2.0
"""How long ffmpeg must keep running after the start to count as recording (OSWorld waits 2 s too)."""
STOP_WAIT_S = 15.0


class RecordingError(AgentRLError, RuntimeError):
    """A recording could not start or stop; ``status`` is the HTTP status OSWorld's server answers with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def ffmpeg_argv(display: str, width: int, height: int, path: str, ffmpeg: str = "ffmpeg") -> list[str]:
    """The ffmpeg command that records ``display`` (``":N"``) at ``width`` x ``height`` into ``path`` (MP4).

    >>> ffmpeg_argv(":5", 1280, 720, "/tmp/r.mp4")[:9]
    ['ffmpeg', '-y', '-f', 'x11grab', '-draw_mouse', '1', '-s', '1280x720', '-i']
    """
    return [
        ffmpeg, "-y", "-f", "x11grab", "-draw_mouse", "1", "-s", f"{width}x{height}", "-i", display,
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-r", "30", path,
    ]  # fmt: skip


class ScreenRecorder:
    """One recording at a time of ``session``'s screen (a :class:`DesktopSession`); thread-safe."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self._lock = threading.Lock()
        self._proc: Any = None
        self._log: IO[bytes] | None = None
        self._path = ""

    @property
    def recording(self) -> bool:
        """Whether an ffmpeg started by :meth:`start` still runs."""
        return self._proc is not None and self._proc.poll() is None

    def _log_text(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read()[-2000:].decode(errors="replace").strip()

    def _forget(self) -> None:
        if self._log is not None:
            self._log.close()
        self._proc, self._log = None, None

    def start(self) -> str:
        """Start ffmpeg; returns OSWorld's success message.

        Raises:
            RecordingError: 400 while a recording runs; 500 when ffmpeg is not installed (the message
                names the apt command) or exits within :data:`START_WAIT_S` (its stderr in the message).
        """
        with self._lock:
            if self.recording:
                raise RecordingError(400, "Recording is already in progress.")
            self._forget()
            ffmpeg = shutil.which("ffmpeg")
            if ffmpeg is None:
                raise RecordingError(
                    500, f"ffmpeg is not installed, so the screen cannot be recorded; install with: {FFMPEG_INSTALL}"
                )
            self._path = f"/tmp/agentrl-recording-{uuid.uuid4().hex}.mp4"  # the sandbox's own /tmp
            argv = ffmpeg_argv(self.session.display, self.session.width, self.session.height, self._path, ffmpeg)
            self._log = tempfile.TemporaryFile()
            try:
                self._proc = self.session.jail.spawn(
                    argv, env=self.session.env(), cwd=self.session.home, stderr=self._log.fileno()
                )
            except OSError as exc:
                self._forget()
                raise RecordingError(500, f"Failed to start recording: {exc}") from None
            try:
                self._proc.wait(timeout=START_WAIT_S)
            except subprocess.TimeoutExpired:
                return "Started recording successfully."
            message = self._log_text()
            self._forget()
            raise RecordingError(500, f"Failed to start recording. ffmpeg terminated unexpectedly. Error: {message}")

    def stop(self) -> bytes:
        """Stop ffmpeg (SIGINT, then SIGKILL after :data:`STOP_WAIT_S`) and return the MP4's bytes.

        Raises:
            RecordingError: 400 when no recording runs; 500 when ffmpeg had to be killed or wrote no file.
        """
        with self._lock:
            if not self.recording:
                self._forget()
                raise RecordingError(400, "No recording in progress to stop.")
            proc, path = self._proc, self._path
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill_group(signal.SIGKILL)
                message = self._log_text()
                self._forget()
                raise RecordingError(
                    500, f"Recording process was unresponsive and had to be killed. Stderr: {message}"
                ) from None
            message = self._log_text()
            self._forget()
            data = self.session.read_file(path)
            with contextlib.suppress(Exception):
                self.session.run(["rm", "-f", path], timeout_s=10.0)
            if not data:
                raise RecordingError(
                    500, f"Recording failed. The output file is missing or empty. ffmpeg stderr: {message}"
                )
            return bytes(data)

    def close(self) -> None:
        """Kill a running ffmpeg (the desktop's reset does it too)."""
        with self._lock:
            if self.recording:
                with contextlib.suppress(Exception):
                    self._proc.kill_group(signal.SIGKILL)
            self._forget()
