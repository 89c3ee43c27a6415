"""Fixtures shared by test modules."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

# The labels our containers carry: the sandbox tier's and the desktop provider's.
CONTAINER_LABELS = ("agentrl.sandbox", "agentrl.desktop")


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[Any]:
    """A private Docker engine for the whole session, with ``DOCKER_HOST`` set to it.

    At the end no container the tests made may be left (``docker ps -a`` lists none with our
    labels), and the engine is stopped by its pid, its data root removed.
    """
    pytest.importorskip("docker", reason="the docker SDK is not installed (pip install 'agentrl-gym[docker]')")
    from agentrl.core.errors import DependencyNotInstalled, SandboxUnavailable
    from agentrl.sandboxes.dockerd import PrivateDockerDaemon

    engine = PrivateDockerDaemon()
    try:
        engine.start()
    except (SandboxUnavailable, DependencyNotInstalled) as exc:
        pytest.skip(f"cannot start a private Docker engine here: {exc}")
    old = os.environ.get("DOCKER_HOST")
    os.environ["DOCKER_HOST"] = engine.host
    pid, root = engine.pid, engine.dir
    try:
        yield engine
        client = engine.client()
        for label in CONTAINER_LABELS:
            left = client.containers.list(all=True, filters={"label": label})
            assert left == [], f"containers labelled {label} left behind: {left}"
    finally:
        if old is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = old
        engine.stop()
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    assert not os.path.exists(root)


@pytest.fixture(scope="session")
def desktop_docker(docker_engine: Any) -> tuple[Any, Any, str]:
    """The engine, a client and the desktop image tag (built once per engine, from the cached tarball)."""
    from agentrl.envs.osworld.container import ensure_desktop_image

    client = docker_engine.client()
    start = time.monotonic()
    tag = ensure_desktop_image(client)
    print(f"\nthe desktop image {tag} took {time.monotonic() - start:.1f}s (first build in this engine)")
    return docker_engine, client, tag
