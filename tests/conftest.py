"""Fixtures shared by test modules."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def desktop_docker() -> Iterator[tuple[Any, Any, str]]:
    """A private Docker engine (``DOCKER_HOST`` set to it) and the desktop image: ``(engine, client, tag)``.

    One engine for the session, so the image is built (from the cached debootstrap tarball) once. At the
    end no desktop container may be left: the engine's ``docker ps -a`` must list none of ours.
    """
    pytest.importorskip("docker", reason="the docker SDK is not installed (pip install 'agentrl-gym[docker]')")
    from agentrl.core.errors import DependencyNotInstalled, SandboxUnavailable
    from agentrl.envs.osworld.container import LABEL, ensure_desktop_image
    from agentrl.sandboxes.dockerd import PrivateDockerDaemon

    engine = PrivateDockerDaemon()
    try:
        engine.start()
    except (SandboxUnavailable, DependencyNotInstalled) as exc:
        pytest.skip(f"cannot start a private Docker engine here: {exc}")
    old = os.environ.get("DOCKER_HOST")
    os.environ["DOCKER_HOST"] = engine.host
    try:
        client = engine.client()
        start = time.monotonic()
        tag = ensure_desktop_image(client)
        print(f"\nthe desktop image {tag} took {time.monotonic() - start:.1f}s (first build in this engine)")
        yield engine, client, tag
        left = client.containers.list(all=True, filters={"label": LABEL})
        assert left == [], f"desktop containers left behind: {left}"
    finally:
        if old is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = old
        engine.stop()
