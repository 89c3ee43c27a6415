"""``env.close()`` of AgentRL/OSWorld-v0 closes every connection the env and its desktop client opened.

A socket left open shows only as a ``ResourceWarning`` when the garbage collector (or ``__del__``)
finds it, which pytest's own warning capture misses: the episode runs in a child Python with
``-X dev -W error::ResourceWarning``, and its stderr must carry no warning at all.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)

pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
if not shutil.which("Xvfb") or not shutil.which("xterm"):
    pytest.skip("needs Xvfb and xterm (make test installs them: apt-get install xvfb xterm)", allow_module_level=True)

TASK_DIR = Path(__file__).parent / "fixtures" / "env"

EPISODE = textwrap.dedent(
    """
    import gc, sys, warnings
    import gymnasium as gym
    import agentrl  # registers the ids
    env = gym.make("AgentRL/OSWorld-v0", tasks=sys.argv[1])
    env.reset(seed=0)
    env.step("WAIT")
    env.close()
    del env
    for _ in range(3):
        gc.collect()
    print("closed", flush=True)
    """
)


def test_close_leaves_no_socket_or_file_open() -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error::ResourceWarning", "-c", EPISODE, str(TASK_DIR)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0 and "closed" in proc.stdout, proc.stderr[-3000:]
    # Raised inside __del__ or a GC callback, the error is only printed ("Exception ignored in ..."): read stderr.
    assert "ResourceWarning" not in proc.stderr, proc.stderr[-3000:]
    assert "unclosed" not in proc.stderr, proc.stderr[-3000:]


def test_client_close_closes_the_connections_of_every_thread() -> None:
    """DesktopClient keeps one connection per thread; close() closes them all, and the client still works."""
    import threading

    from agentrl.envs.osworld.client import DesktopClient
    from agentrl.envs.osworld.runtime.desktop import DesktopSession
    from agentrl.envs.osworld.server import serve_desktop

    with DesktopSession(accessibility=False) as session:
        server = serve_desktop(session, token="t")
        try:
            client = DesktopClient(server.base_url, token="t")
            threads = [threading.Thread(target=client.screen_size) for _ in range(3)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            client.screen_size()
            conns = list(client._conns)
            assert len(conns) == 4 and all(conn.sock is not None for conn in conns)
            client.close()
            assert all(conn.sock is None for conn in conns) and not client._conns
            assert client.screen_size() == (session.width, session.height)  # reconnects
            client.close()
            client.close()  # idempotent
        finally:
            server.close()
