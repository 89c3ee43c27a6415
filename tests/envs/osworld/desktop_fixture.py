"""The desktop the OSWorld server tests share: one small session per test module, or a skip that says why."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentrl.core.errors import SandboxUnavailable
from agentrl.envs.osworld.runtime.desktop import DesktopSession


def desktop_session() -> Iterator[DesktopSession]:
    """Yield a 640x480 :class:`DesktopSession` and close it after; skip where no X desktop can start.

    A module's fixture is ``yield from desktop_session()`` (module scope: one desktop per module).
    """
    try:
        session = DesktopSession(width=640, height=480)
    except SandboxUnavailable as exc:
        pytest.skip(f"no X desktop here (Xvfb could not be installed or started): {exc}")
    yield session
    session.close()
