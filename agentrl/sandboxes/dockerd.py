"""A private Docker engine, and the sandbox image built locally (no registry needed).

:class:`PrivateDockerDaemon` starts ``dockerd`` on a unix socket in a temporary directory (its own
data and exec roots, no iptables, no bridge: containers can only use ``network_mode="none"``), and
stops it by its pid on exit. :func:`ensure_image` builds the sandbox image once: a minimal Debian made
with ``debootstrap`` (cached as a tarball under ``~/.cache/agentrl/docker/``), ``docker import``-ed as
the base, and a ``docker build`` on top (``docker_image/Dockerfile``) that adds the non-root user and
the worker program. The image tag is ``agentrl-sandbox:<hash of the recipe>``, so an engine that
already has it reuses it.

Both need root on Debian/Ubuntu (``apt-get install docker.io debootstrap``); without them they raise
:class:`agentrl.core.errors.SandboxUnavailable` naming the fix.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from typing import IO, Any

from agentrl.core.errors import DependencyNotInstalled, SandboxMisuse, SandboxUnavailable

__all__ = [
    "IMAGE_REPO",
    "PrivateDockerDaemon",
    "build_image",
    "debootstrap_argv",
    "ensure_base_image",
    "ensure_image",
    "image_recipe_hash",
    "rootfs_tarball",
]

IMAGE_REPO = "agentrl-sandbox"
BASE_REPO = "agentrl-sandbox-base"
_HERE = os.path.dirname(os.path.abspath(__file__))
_IMAGE_DIR = os.path.join(_HERE, "docker_image")
_WORKER_FILE = os.path.join(_HERE, "_worker.py")
_DEBIAN_SUITE = "bookworm"
_DEBIAN_MIRROR = "http://deb.debian.org/debian"
# numpy and sympy too: the same modules the process tier pre-imports (tool-integrated math needs them)
_DEBOOTSTRAP = ["debootstrap", "--variant=minbase", "--include=python3,python3-numpy,python3-sympy", _DEBIAN_SUITE]


def debootstrap_argv(include: list[str] | tuple[str, ...]) -> list[str]:
    """The debootstrap command line (without target and mirror) for a minimal Debian with ``include``."""
    return ["debootstrap", "--variant=minbase", "--include=" + ",".join(include), _DEBIAN_SUITE]


_START_TIMEOUT_S = 60.0
_INSTALL_HINT = "sudo apt-get install -y docker.io"


def _is_root() -> bool:
    return os.geteuid() == 0


def _apt_install(package: str, binary: str, hint: str) -> str:
    """Return the path of ``binary``, installing ``package`` with apt-get when we are root."""
    found = shutil.which(binary) or (os.path.exists(f"/usr/sbin/{binary}") and f"/usr/sbin/{binary}") or None
    if found:
        return found
    if not (_is_root() and shutil.which("apt-get")):
        raise SandboxUnavailable(f"{binary} is not installed; install it with: {hint}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    proc = subprocess.run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", package],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    if proc.returncode != 0:
        # The package lists may be missing (fresh image): update once and retry.
        subprocess.run(["apt-get", "update", "-q"], capture_output=True, env=env, timeout=600)
        proc = subprocess.run(
            ["apt-get", "install", "-y", "-q", "--no-install-recommends", package],
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
        )
    found = shutil.which(binary) or (os.path.exists(f"/usr/sbin/{binary}") and f"/usr/sbin/{binary}") or None
    if proc.returncode != 0 or not found:
        raise SandboxUnavailable(
            f"could not install {package} with apt-get ({proc.stderr.strip()[-500:]}); install it with: {hint}"
        )
    return found


def _docker_sdk() -> Any:
    try:
        import docker
    except ImportError as exc:
        raise DependencyNotInstalled("docker", extra="docker") from exc
    return docker


def _mounts_under(path: str) -> list[str]:
    found = []
    with contextlib.suppress(OSError), open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 1:
                target = parts[1].replace("\\040", " ")
                if target == path or target.startswith(path.rstrip("/") + "/"):
                    found.append(target)
    return found


class PrivateDockerDaemon:
    """Run a private ``dockerd`` for the lifetime of a ``with`` block.

    Args:
        root_dir: where its socket, data root and exec root go; a fresh temporary directory (removed
            on exit) when ``None``.
        start_timeout_s: how long to wait for the engine to answer.

    Attributes:
        host: ``"unix:///.../docker.sock"``, for ``DOCKER_HOST`` or ``docker.DockerClient(base_url=...)``.
        pid: the daemon's pid.

    Raises:
        SandboxUnavailable: no ``dockerd`` and no way to install it, not root, or it did not start.

    """

    def __init__(self, root_dir: str | None = None, start_timeout_s: float = _START_TIMEOUT_S) -> None:
        """Remember the options; :meth:`start` (or ``with``) starts the engine."""
        self._given_root = root_dir
        self.start_timeout_s = float(start_timeout_s)
        self.dir: str | None = None
        self.host = ""
        self.pid: int | None = None
        self._proc: subprocess.Popen | None = None
        self._log: IO[bytes] | None = None
        self._clients: list[Any] = []

    def start(self) -> PrivateDockerDaemon:
        """Start the engine and wait until it answers a ping."""
        if not _is_root():
            raise SandboxUnavailable(
                f"a private Docker engine needs root (dockerd); run as root or use a running "
                f"engine via DOCKER_HOST; install with: {_INSTALL_HINT}"
            )
        dockerd = _apt_install("docker.io", "dockerd", _INSTALL_HINT)
        docker = _docker_sdk()
        self.dir = self._given_root or tempfile.mkdtemp(prefix="agentrl-dockerd-")
        os.makedirs(self.dir, exist_ok=True)
        sock = os.path.join(self.dir, "docker.sock")
        self.host = f"unix://{sock}"
        argv = [
            dockerd,
            "--host",
            self.host,
            "--data-root",
            os.path.join(self.dir, "root"),
            "--exec-root",
            os.path.join(self.dir, "exec"),
            "--pidfile",
            os.path.join(self.dir, "docker.pid"),
            "--iptables=false",
            "--ip-masq=false",
            "--bridge=none",
        ]
        self._log = open(os.path.join(self.dir, "dockerd.log"), "wb")
        env = {k: v for k, v in os.environ.items() if k not in ("DOCKER_HOST", "NOTIFY_SOCKET")}
        self._proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        self.pid = self._proc.pid
        deadline = time.monotonic() + self.start_timeout_s
        last: BaseException | None = None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            if os.path.exists(sock):
                try:
                    client = docker.DockerClient(base_url=self.host, timeout=10)
                    client.ping()
                    client.close()
                    return self
                except Exception as exc:
                    last = exc
            time.sleep(0.1)
        log = self._tail_log()
        self.stop()
        raise SandboxUnavailable(f"dockerd did not start within {self.start_timeout_s:g}s ({last!r}); log: {log}")

    def _tail_log(self) -> str:
        if not self.dir:
            return ""
        with contextlib.suppress(OSError), open(os.path.join(self.dir, "dockerd.log"), "rb") as f:
            return f.read()[-2000:].decode("utf-8", "replace")
        return ""

    def client(self, timeout: int = 120) -> Any:
        """Return a docker SDK client for this engine (closed when the daemon stops)."""
        if not self.host or self._proc is None:
            raise SandboxMisuse("PrivateDockerDaemon is not running: call start() first (or use it in a with block)")
        client = _docker_sdk().DockerClient(base_url=self.host, timeout=timeout)
        self._clients.append(client)
        return client

    def stop(self) -> None:
        """Stop the engine by its pid (SIGTERM, then SIGKILL), unmount and remove its directories."""
        for client in self._clients:
            with contextlib.suppress(Exception):
                client.close()
        self._clients = []
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=10)
            # Its own containerd was started in the daemon's session: end what is left of it.
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.dir:
            for target in sorted(_mounts_under(self.dir), key=len, reverse=True):
                subprocess.run(["umount", "-l", target], capture_output=True, timeout=30)
            if self._given_root is None:
                shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self) -> PrivateDockerDaemon:
        """Start the engine."""
        return self.start()

    def __exit__(self, *exc: object) -> None:
        """Stop the engine."""
        self.stop()


def _hash_files(h: Any, paths: list[str]) -> None:
    for path in paths:
        h.update(os.path.basename(path).encode() + b"\0")
        with open(path, "rb") as f:
            h.update(f.read())
        h.update(b"\0")


def _base_hash(argv: list[str] | None = None) -> str:
    return hashlib.sha256(" ".join([*(argv or _DEBOOTSTRAP), _DEBIAN_MIRROR]).encode()).hexdigest()[:12]


def _context_files() -> list[str]:
    return [os.path.join(_IMAGE_DIR, "Dockerfile"), os.path.join(_IMAGE_DIR, "launch.py"), _WORKER_FILE]


def image_recipe_hash() -> str:
    """Hash of everything the image is made from: the debootstrap line, the Dockerfile, the programs."""
    h = hashlib.sha256(_base_hash().encode())
    _hash_files(h, _context_files())
    return h.hexdigest()[:12]


def _cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "agentrl", "docker")
    os.makedirs(path, exist_ok=True)
    return path


def _rootfs_tarball() -> str:
    """Debootstrap a minimal Debian with python3, numpy and sympy once; return the cached tarball's path."""
    return rootfs_tarball()


def rootfs_tarball(argv: list[str] | None = None, name: str = "rootfs") -> str:
    """Run ``argv`` (see :func:`debootstrap_argv`; the sandbox's by default) once; return the cached tarball.

    The tarball is ``~/.cache/agentrl/docker/<name>-bookworm-<hash of argv>.tar``.
    """
    argv = argv or _DEBOOTSTRAP
    tarball = os.path.join(_cache_dir(), f"{name}-{_DEBIAN_SUITE}-{_base_hash(argv)}.tar")
    if os.path.exists(tarball):
        return tarball
    if not _is_root():
        raise SandboxUnavailable(
            "building the sandbox image needs root (debootstrap); run once as root, or pass "
            "image= an existing image with python3"
        )
    debootstrap = _apt_install("debootstrap", "debootstrap", "sudo apt-get install -y debootstrap")
    work = tempfile.mkdtemp(prefix="agentrl-rootfs-", dir=_cache_dir())
    try:
        target = os.path.join(work, "root")
        proc = subprocess.run(
            [debootstrap, *argv[1:], target, _DEBIAN_MIRROR], capture_output=True, text=True, timeout=1800
        )
        if proc.returncode != 0:
            raise SandboxUnavailable(
                f"debootstrap failed (exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()[-1500:]}"
            )
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for name in os.listdir(os.path.join(target, junk)) if os.path.isdir(os.path.join(target, junk)) else []:
                p = os.path.join(target, junk, name)
                if os.path.isfile(p) and (name.endswith(".deb") or junk.endswith("lists")):
                    os.unlink(p)
        part = tarball + ".part"
        proc = subprocess.run(
            ["tar", "--numeric-owner", "-C", target, "-cf", part, "."], capture_output=True, text=True, timeout=600
        )
        if proc.returncode != 0:
            raise SandboxUnavailable(f"could not pack the root filesystem: {proc.stderr.strip()[-1000:]}")
        os.replace(part, tarball)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tarball


def _has_image(client: Any, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def ensure_image(client: Any) -> str:
    """Build the sandbox image on ``client``'s engine unless it is there; return its tag.

    The first build debootstraps Debian (a few minutes, cached afterwards under
    ``~/.cache/agentrl/docker/``); later ones import that tarball and build in seconds, and an engine
    that has the tag already returns at once.
    """
    _docker_sdk()
    tag = f"{IMAGE_REPO}:{image_recipe_hash()}"
    if _has_image(client, tag):
        return tag
    base = ensure_base_image(client)
    with tempfile.TemporaryDirectory(prefix="agentrl-image-") as ctx:
        for path in _context_files():
            shutil.copy(path, os.path.join(ctx, os.path.basename(path)))
        build_image(client, ctx, tag, base, what="the sandbox image")
    return tag


def ensure_base_image(client: Any, argv: list[str] | None = None, repo: str = BASE_REPO, name: str = "rootfs") -> str:
    """Import the debootstrap tarball of ``argv`` (see :func:`rootfs_tarball`) as ``repo:<hash>`` unless present."""
    base_tag = _base_hash(argv)
    base = f"{repo}:{base_tag}"
    if not _has_image(client, base):
        tarball = rootfs_tarball(argv, name=name)
        client.api.import_image_from_file(tarball, repository=repo, tag=base_tag)
        if not _has_image(client, base):
            raise SandboxUnavailable(f"docker import of {tarball} did not produce {base}")
    return base


def build_image(client: Any, context_dir: str, tag: str, base: str, *, what: str = "the image") -> str:
    """``docker build`` ``context_dir`` (its Dockerfile gets ``--build-arg BASE=base``) without network, as ``tag``."""
    try:
        client.images.build(
            path=context_dir,
            tag=tag,
            buildargs={"BASE": base},
            rm=True,
            forcerm=True,
            network_mode="none",
            labels={"agentrl.image": "1"},
        )
    except Exception as exc:  # docker.errors.BuildError / APIError
        log = "".join(str(c.get("stream", c.get("error", ""))) for c in getattr(exc, "build_log", []) or [])
        raise SandboxUnavailable(f"docker build of {what} failed: {exc}; {log[-1500:]}") from exc
    return tag
