"""A desktop per Docker container: ``gym.make("AgentRL/OSWorld-v0", provider="docker")``.

:class:`DesktopContainer` runs ``agentrl serve-desktop`` in its own container and gives the env a
``unix:`` URL to it. The container has no network (``network_mode="none"``), a read-only root, tmpfs
``/tmp`` and HOME, runs as uid 1000 with every capability dropped and ``no-new-privileges``, and has
memory, CPU and process limits. The server listens on a unix socket in a host temporary directory
bind-mounted at ``/run/agentrl``; its bearer token is a random string written there.

The image ``agentrl-desktop:<hash of the recipe>`` is built locally, without a registry:
:func:`ensure_desktop_image` debootstraps a minimal Debian with the desktop packages (cached as a
tarball under ``~/.cache/agentrl/docker/``, a few minutes the first time), ``docker import``-s it and
``docker build``-s ``docker_image/Dockerfile`` on top, adding the agentrl package and the pure-Python
packages it imports, copied from this Python's ``site-packages``. ``docker_image/Dockerfile.public``
is the registry-friendly variant (``pip install agentrl-gym[desktop]`` on ``debian:bookworm-slim``).

The Docker engine is ``DOCKER_HOST`` when set (or the ``docker_client`` given), else a private
``dockerd`` (:class:`agentrl.sandboxes.dockerd.PrivateDockerDaemon`, root needed) shared by all the
containers of this process and stopped at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import http.client
import importlib.util
import json
import os
import secrets
import shutil
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any

from agentrl.core.errors import SandboxUnavailable
from agentrl.serving.stack import UnixHTTPConnection

__all__ = [
    "DESKTOP_PACKAGES",
    "IMAGE_REPO",
    "SITE_PACKAGES",
    "DesktopContainer",
    "desktop_image_recipe_hash",
    "ensure_desktop_image",
]

IMAGE_REPO = "agentrl-desktop"
BASE_REPO = "agentrl-desktop-base"
LABEL = "agentrl.desktop"
# Debian bookworm packages of the image (debootstrap resolves their Depends, not Recommends).
DESKTOP_PACKAGES = (
    "python3",
    "python3-numpy",
    "python3-pil",
    "python3-xlib",
    "xvfb",
    "xfwm4",
    "xterm",
    "mousepad",
    "thunar",
    "galculator",
    "xdotool",
    "x11-utils",
    "dbus",
    "dbus-x11",
    "at-spi2-core",
    "python3-gi",
    "gir1.2-atspi-2.0",
    "fonts-dejavu-core",
)
BROWSER_PACKAGES = ("chromium",)
# Pure-Python packages the desktop server and the pyautogui worker import, copied from this Python.
SITE_PACKAGES = (
    "gymnasium",
    "farama_notifications",
    "cloudpickle",
    "typing_extensions",
    "pyautogui",
    "pymsgbox",
    "pytweening",
    "pyscreeze",
    "mouseinfo",
    "pyrect",
    "pygetwindow",
    "mss",
    # the desktop server's stack (agentrl.serving.stack): Starlette on uvicorn, all pure Python
    "starlette",
    "anyio",
    "idna",
    "uvicorn",
    "h11",
    "click",
)
_OPTIONAL_SITE = frozenset({"pygetwindow", "mouseinfo", "pymsgbox"})
_INSTALL_HINT = "apt-get install -y docker.io debootstrap"
_HERE = os.path.dirname(os.path.abspath(__file__))
_IMAGE_DIR = os.path.join(_HERE, "docker_image")
# agentrl/ itself: this file is agentrl/envs/osworld/runtime/container.py
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))
_SKIP_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
_SOCKET = "desktop.sock"


# ---------------------------------------------------------------------------------------- image
def _debootstrap_argv(chromium: bool = False) -> list[str]:
    from agentrl.sandboxes.dockerd import debootstrap_argv

    return debootstrap_argv([*DESKTOP_PACKAGES, *(BROWSER_PACKAGES if chromium else ())])


def _walk(root: str) -> list[str]:
    """Files under ``root`` (or ``[root]`` for a file), sorted, without caches and byte code."""
    if os.path.isfile(root):
        return [root]
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        found += [os.path.join(dirpath, f) for f in sorted(filenames) if not f.endswith((".pyc", ".pyo"))]
    return found


def _site_sources() -> dict[str, str]:
    """``{name: path}`` of :data:`SITE_PACKAGES` in this Python; each must be pure Python."""
    sources: dict[str, str] = {}
    for name in SITE_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None:
            if name in _OPTIONAL_SITE:
                continue
            raise SandboxUnavailable(
                f"{name} is not installed here, and the desktop image copies it from this Python; "
                "install with: pip install 'agentrl-gym[desktop]'"
            )
        path = spec.submodule_search_locations[0] if spec.submodule_search_locations else spec.origin
        assert path is not None
        native = [p for p in _walk(path) if p.endswith((".so", ".pyd"))]
        if native:
            raise SandboxUnavailable(f"{name} has compiled modules ({native[0]}); the desktop image needs pure Python")
        sources[name] = path
    return sources


def desktop_image_recipe_hash(chromium: bool = False) -> str:
    """Hash of the debootstrap line, the Dockerfile, the agentrl package and the copied packages."""
    from agentrl.sandboxes.dockerd import _base_hash

    h = hashlib.sha256(_base_hash(_debootstrap_argv(chromium)).encode())
    trees = [os.path.join(_IMAGE_DIR, "Dockerfile"), _PACKAGE_DIR, *_site_sources().values()]
    for tree in trees:
        base = os.path.dirname(tree)
        for path in _walk(tree):
            h.update(os.path.relpath(path, base).encode() + b"\0")
            with open(path, "rb") as f:
                h.update(f.read())
    h.update(f"{sys.version_info[:2]}".encode())
    return h.hexdigest()[:12]


def ensure_desktop_image(client: Any, chromium: bool = False) -> str:
    """Build the desktop image on ``client``'s engine unless it is there; return its tag.

    The first build debootstraps Debian with the desktop packages (minutes; cached afterwards under
    ``~/.cache/agentrl/docker/``); later ones import that tarball and build in seconds.
    """
    from agentrl.sandboxes.dockerd import _has_image, build_image, ensure_base_image

    if sys.version_info[:2] != (3, 11):
        raise SandboxUnavailable(
            f"the desktop image's python3 is 3.11 (Debian bookworm) and this is "
            f"{sys.version_info.major}.{sys.version_info.minor}; build docker_image/Dockerfile.public "
            "and pass docker_image=, or use Python 3.11"
        )
    tag = f"{IMAGE_REPO}:{desktop_image_recipe_hash(chromium)}{'-chromium' if chromium else ''}"
    if _has_image(client, tag):
        return tag
    base = ensure_base_image(client, _debootstrap_argv(chromium), repo=BASE_REPO, name="desktop-rootfs")
    with tempfile.TemporaryDirectory(prefix="agentrl-desktop-image-") as ctx:
        shutil.copy(os.path.join(_IMAGE_DIR, "Dockerfile"), os.path.join(ctx, "Dockerfile"))
        site = os.path.join(ctx, "site")
        trees = {"agentrl": _PACKAGE_DIR, **_site_sources()}
        for name, src in trees.items():
            dest = os.path.join(site, os.path.basename(src) if name != "agentrl" else "agentrl")
            if os.path.isfile(src):
                os.makedirs(site, exist_ok=True)
                shutil.copy(src, dest)
            else:
                skip = shutil.ignore_patterns(*_SKIP_DIRS, "*.pyc", "*.pyo")
                shutil.copytree(src, dest, ignore=_without_task_files(src, skip) if name == "agentrl" else skip)
        build_image(client, ctx, tag, base, what="the desktop image")
    return tag


def _without_task_files(package: str, skip: Any) -> Any:
    """``copytree``'s ignore for the agentrl package copied into the image: also the OSWorld tasks folder.

    The desktop server in the container never reads a task (the env on the host does); the tasks' files and
    their oracles must not be where the agent's actions run (the container has no sandbox of its own).
    """
    tasks = os.path.join(package, "envs", "osworld", "tasks")

    def ignore(folder: str, names: list[str]) -> set[str]:
        left = set(skip(folder, names))
        if os.path.realpath(folder) == os.path.realpath(os.path.dirname(tasks)):
            left.add("tasks")
        return left

    return ignore


# ---------------------------------------------------------------------------------------- engine
_engine_lock = threading.Lock()
_engine: dict[str, Any] = {}


def _stop_shared_daemon() -> None:
    daemon = _engine.pop("daemon", None)
    client = _engine.pop("client", None)
    if client is not None:
        with contextlib.suppress(Exception):
            client.close()
    if daemon is not None:
        with contextlib.suppress(Exception):
            daemon.stop()


def _shared_client() -> Any:
    """A docker client for ``DOCKER_HOST`` if set, else for a private dockerd started once per process."""
    from agentrl.sandboxes.dockerd import PrivateDockerDaemon, _docker_sdk

    docker = _docker_sdk()
    if os.environ.get("DOCKER_HOST"):
        return docker.from_env(timeout=120)
    with _engine_lock:
        if "client" not in _engine:
            if not (shutil.which("dockerd") or os.path.exists("/usr/sbin/dockerd")) and os.geteuid() != 0:
                raise SandboxUnavailable(f"docker.io is not installed; install with: {_INSTALL_HINT}")
            daemon = PrivateDockerDaemon()
            try:
                daemon.start()
            except SandboxUnavailable as exc:
                raise SandboxUnavailable(
                    f"cannot start a private Docker engine for provider='docker' ({exc}); set DOCKER_HOST to a "
                    f"running engine, or run as root with docker.io installed ({_INSTALL_HINT})"
                ) from exc
            _engine["daemon"] = daemon
            _engine["client"] = daemon.client()
            atexit.register(_stop_shared_daemon)
        return _engine["client"]


# ---------------------------------------------------------------------------------------- container
@dataclass
class _State:
    """What the finalizer needs; holds no reference to the DesktopContainer."""

    client: Any = None
    container_id: str | None = None
    dir: str | None = None


def _answers_alive(sock: str, token: str | None, timeout_s: float = 10.0) -> bool:
    """Whether the desktop server on unix socket ``sock`` answers ``GET /health`` with ``alive``."""
    conn = UnixHTTPConnection(sock, timeout=timeout_s)
    try:
        conn.request("GET", "/health", headers={"Authorization": f"Bearer {token}"} if token else {})
        response = conn.getresponse()
        return response.status == 200 and bool(json.loads(response.read()).get("alive"))
    except (OSError, ValueError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def _remove_container(state: _State) -> None:
    cid, state.container_id = state.container_id, None
    if cid is not None and state.client is not None:
        with contextlib.suppress(Exception):
            state.client.api.remove_container(cid, force=True)


def _cleanup(state: _State) -> None:
    _remove_container(state)
    if state.dir is not None:
        shutil.rmtree(state.dir, ignore_errors=True)
        state.dir = None


class DesktopContainer:
    """``agentrl serve-desktop`` in its own Docker container, reached over a unix socket.

    Args:
        width, height: the screen size.
        image: an image whose entrypoint is ``docker_image/Dockerfile``'s (``None``: build/reuse
            ``agentrl-desktop:<recipe hash>`` with :func:`ensure_desktop_image`).
        docker_client: a ``docker.DockerClient`` (``None``: ``DOCKER_HOST``, else a private engine).
        memory, cpus, pids_limit: the container's limits.
        startup_timeout_s: how long to wait for the desktop to answer ``/health``.

    Attributes: ``base_url`` (``"unix:<host socket>"``), ``token``, ``image``, ``container_id``,
    ``last_start_s`` (seconds from ``docker run`` to a healthy desktop).

    Raises:
        SandboxUnavailable: no engine (the message names the fix), the image build failed, or the
            desktop did not come up (with the container's log).
    """

    def __init__(
        self,
        width: int = 1280,
        height: int = 720,
        *,
        image: str | None = None,
        docker_client: Any = None,
        memory: str = "2g",
        cpus: float = 1.0,
        pids_limit: int = 512,
        startup_timeout_s: float = 60.0,
    ) -> None:
        """Start the container and wait until its desktop answers."""
        self.width, self.height = int(width), int(height)
        self.memory, self.cpus, self.pids_limit = memory, float(cpus), int(pids_limit)
        self.startup_timeout_s = float(startup_timeout_s)
        self.token = secrets.token_urlsafe(24)
        self.last_start_s = 0.0
        self._state = _State(client=docker_client if docker_client is not None else _shared_client())
        self._finalizer = weakref.finalize(self, _cleanup, self._state)
        self.image = image or ensure_desktop_image(self._state.client)
        self._state.dir = tempfile.mkdtemp(prefix="agentrl-desktop-ctr-")
        self._prepare_dir()
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    @property
    def base_url(self) -> str:
        """``unix:<path of the server's socket on this host>``."""
        assert self._state.dir is not None, "the DesktopContainer is closed"
        return f"unix:{os.path.join(self._state.dir, _SOCKET)}"

    @property
    def container_id(self) -> str | None:
        """The running container's id."""
        return self._state.container_id

    def _prepare_dir(self) -> None:
        path = self._state.dir
        assert path is not None
        token_file = os.path.join(path, "token")
        fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.token)
        self._own_dir(1000)

    def _own_dir(self, uid: int) -> None:
        """Give the socket folder and token to ``uid``: 1000 while the server starts, then root (0).

        Once the server listens, the folder and token belong to root again, so the agent's code (uid
        1000 in the container) can neither read the token nor write files into this host folder.
        """
        path = self._state.dir
        assert path is not None
        token_file = os.path.join(path, "token")
        try:
            os.chown(path, uid, uid)
            os.chown(token_file, uid, uid)
            os.chmod(path, 0o700 if uid else 0o755)
            os.chmod(token_file, 0o600)
        except PermissionError:  # not root: the engine maps users its own way
            os.chmod(path, 0o777)
            os.chmod(token_file, 0o644)

    def _start(self) -> None:
        assert self._state.dir is not None
        sock = os.path.join(self._state.dir, _SOCKET)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(sock)
        self._own_dir(1000)
        started = time.monotonic()
        container = self._state.client.containers.run(
            self.image,
            command=["--width", str(self.width), "--height", str(self.height)],
            detach=True,
            network_mode="none",
            read_only=True,
            tmpfs={
                "/tmp": "rw,nosuid,nodev,size=1g,mode=1777",
                "/home/desktop": "rw,nosuid,nodev,size=256m,uid=1000,gid=1000,mode=0700",
            },
            volumes={self._state.dir: {"bind": "/run/agentrl", "mode": "rw"}},
            user="1000:1000",
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            mem_limit=self.memory,
            memswap_limit=self.memory,
            nano_cpus=int(self.cpus * 1e9),
            pids_limit=self.pids_limit,
            shm_size="256m",
            init=True,
            labels={LABEL: "1"},
        )
        self._state.container_id = container.id
        if self._wait_alive(container, sock, started):
            return
        log = ""
        with contextlib.suppress(Exception):
            log = container.logs(tail=40).decode("utf-8", "replace")
        status = getattr(container, "status", "?")
        self._stop_container()
        raise SandboxUnavailable(
            f"the desktop container ({self.image}) did not answer within {self.startup_timeout_s:g}s "
            f"(status {status}); its log: {log.strip()[-2000:]}"
        )

    def _wait_alive(self, container: Any, sock: str, started: float) -> bool:
        """Wait until the container's server answers ``/health`` alive; ``False`` at the deadline or when it exited."""
        deadline = started + self.startup_timeout_s
        while time.monotonic() < deadline:
            if os.path.exists(sock) and _answers_alive(sock, self.token):
                self.last_start_s = time.monotonic() - started
                if os.geteuid() == 0:
                    self._own_dir(0)
                return True
            container.reload()
            if container.status in ("exited", "dead"):
                break
            time.sleep(0.1)
        return False

    def _stop_container(self) -> None:
        _remove_container(self._state)

    def alive(self) -> bool:
        """Whether the container is running."""
        cid = self._state.container_id
        if cid is None:
            return False
        try:
            return bool(self._state.client.api.inspect_container(cid)["State"]["Running"])
        except Exception:
            return False

    def restart(self) -> None:
        """Replace the container with a fresh one (same socket path and token)."""
        if self._state.dir is None:
            raise RuntimeError("the DesktopContainer is closed")
        self._stop_container()
        self._start()

    def close(self) -> None:
        """Remove the container (forced) and the socket folder. Idempotent."""
        self._finalizer()

    def __enter__(self) -> DesktopContainer:
        """Return self."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close."""
        self.close()
