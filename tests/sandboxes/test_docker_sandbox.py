"""The docker sandbox tier: semantics of PythonSandbox, the attack suite, and container escapes.

The attacks are the list every tier is put through (tests/sandboxes/sandbox_attack_list.py), plus what only a container
shows: no host files, a full tmpfs, no route out, its own process table, a kill from outside.

A private Docker engine is started for the session (root and Debian's docker.io needed; the module is
skipped with the reason otherwise) and the sandbox image is built once (the first debootstrap takes
about half a minute to a few minutes and is cached under ~/.cache/agentrl/docker/; later sessions
import the cached root filesystem and build in a few seconds).
"""

from __future__ import annotations

import os
import statistics
import time

import pytest

pytest.importorskip("docker", reason="the docker SDK is not installed (pip install 'agentrl-gym[docker]')")

from agentrl.sandboxes.base import ExecutionRequest
from agentrl.sandboxes.docker import DockerSandbox
from agentrl.sandboxes.dockerd import ensure_image
from agentrl.testing import PORTABLE_SANDBOX_ATTACKS, check_sandbox_attack
from tests.sandboxes.sandbox_attack_list import ATTACKS, Attack, attack, connect, loopback_port, run, still_usable

pytestmark = pytest.mark.timeout(600)

LABEL = {"label": "agentrl.sandbox"}


@pytest.fixture(scope="session")
def daemon(docker_engine):
    """The session's private engine (tests/conftest.py): no sandbox container may be left at the end."""
    return docker_engine


@pytest.fixture(scope="session")
def client(daemon):
    return daemon.client()


@pytest.fixture(scope="session")
def image(client):
    start = time.monotonic()
    tag = ensure_image(client)
    print(f"\nsandbox image {tag} ready in {time.monotonic() - start:.1f}s")
    return tag


@pytest.fixture(scope="module")
def box(client, image):
    with DockerSandbox(
        client=client, image=image, timeout_s=3.0, max_file_mb=16, max_output_chars=2000, tmpfs_mb=64
    ) as sandbox:
        yield sandbox


def ours(client) -> list:
    """Our containers, from the list call alone (``sparse``): inspecting each one after listing races the pool,
    which removes a used container as it replaces it (a 404 on one that was just removed failed a run once)."""
    return client.containers.list(all=True, filters=LABEL, sparse=True)


def owned_by(client, sandbox) -> list:
    return [c for c in ours(client) if (c.attrs.get("Labels") or {}).get("agentrl.sandbox.owner") == sandbox._owner]


# -- semantics ---------------------------------------------------------------------------------
def test_print(box):
    r = run(box, "print(6*7)")
    assert r.ok and r.output == "42\n" and r.error is None
    assert "no network" in box.isolation and "read-only root" in box.isolation


def test_state_persists_until_reset(box):
    assert run(box, "x = 41").ok
    assert run(box, "x + 1").output == "42\n"
    box.reset()
    r = run(box, "x")
    assert not r.ok and "NameError" in r.error
    still_usable(box)


def test_user_error_is_a_result(box):
    r = run(box, "1/0")
    assert not r.ok and "ZeroDivisionError" in r.error


def test_runs_as_non_root_without_capabilities(box):
    r = run(
        box,
        "import os\nprint(os.getuid(), os.getgid(), os.getcwd())\n"
        "print([l for l in open('/proc/self/status') if l.startswith('CapEff')][0].split()[1])",
    )
    assert r.ok and r.output == "1000 1000 /tmp\n0000000000000000\n", r


def test_timeout_then_usable(box):
    run(box, "y = 1")
    r = run(box, "import time\ntime.sleep(30)", timeout_s=0.5)
    assert r.timed_out and not r.ok and "timed out after 0.5s" in r.error
    assert "NameError" in run(box, "y").error  # a new container
    still_usable(box)


def test_warm_latency_and_cold_start(client, image):
    start = time.monotonic()
    with DockerSandbox(client=client, image=image, pool_size=0) as sandbox:
        first = sandbox.execute(ExecutionRequest("print(1)"))
        cold = time.monotonic() - start
        assert first.ok and first.output == "1\n"
        lat = []
        for _ in range(100):
            t = time.perf_counter()
            assert sandbox.execute(ExecutionRequest("print(1)")).output == "1\n"
            lat.append(time.perf_counter() - t)
    median = statistics.median(lat)
    print(f"\ncold start {cold * 1e3:.0f} ms, warm print(1) median {median * 1e3:.2f} ms")
    assert cold < 30 and median < 0.05


def test_close_removes_every_container(client, image):
    sandbox = DockerSandbox(client=client, image=image, pool_size=2)
    assert sandbox.execute(ExecutionRequest("print(1)")).ok
    sandbox.reset()
    assert sandbox.execute(ExecutionRequest("print(2)")).ok
    mine = owned_by(client, sandbox)
    assert mine
    sandbox.close()
    sandbox.close()
    assert owned_by(client, sandbox) == []
    with pytest.raises(RuntimeError):
        sandbox.execute(ExecutionRequest("1"))


# -- the attack suite --------------------------------------------------------------------------
@pytest.mark.parametrize("case", ATTACKS, ids=str)
def test_attack(box, case: Attack):
    result = attack(box, case)
    if case.forks:  # the container's pid namespace holds its worker alone again
        r = run(box, "import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))")
        assert r.output == "[1]\n", r
    if "_exit" in case.code:
        assert "the container died and was replaced" in result.error, result


def test_fill_the_tmpfs(box):
    r = run(
        box,
        "i = 0\nwhile True:\n    with open(f'/tmp/fill{i}', 'wb') as f:\n"
        "        f.write(b'\\1' * (8 * 1024 * 1024))\n    i += 1",
    )
    assert not r.ok and "No space left" in r.error, r
    still_usable(box)
    assert run(box, "import os\nfor n in os.listdir('/tmp'): os.unlink('/tmp/' + n)\nprint('ok')").output == "ok\n"


def test_no_host_files(box):
    r = run(box, f"open({os.path.abspath(__file__)!r}).read()")
    assert not r.ok and "FileNotFoundError" in r.error
    r = run(box, "import os\nprint(os.listdir('/root') if os.path.exists('/root') else 'none')")
    assert "PermissionError" in (r.error or "") or r.output in ("[]\n", "none\n")


def test_write_outside_scratch(box):
    for path in ("/usr/pwned", "/etc/pwned", "/pwned", "/opt/agentrl/_worker.py"):
        r = run(box, f"open({path!r}, 'w').write('x')")
        assert not r.ok and ("Read-only file system" in r.error or "PermissionError" in r.error), (path, r)
    assert run(box, "open('/tmp/ok.txt', 'w').write('x')").ok
    still_usable(box)


@pytest.mark.parametrize("address", [("8.8.8.8", 53), ("1.1.1.1", 443)])
def test_no_network(box, address):
    r = run(box, connect(address))
    assert not r.ok and "connected" not in r.output and "Error" in r.error
    still_usable(box)


def test_no_host_loopback(box):
    with loopback_port() as port:
        r = run(box, connect(("127.0.0.1", port)))
        assert not r.ok and "connected" not in r.output
        r = run(box, "import socket\nprint(sorted(n for _, n in socket.if_nameindex()))")
        assert r.output == "['lo']\n", r
    still_usable(box)


def test_kill_the_container_from_outside(box, client):
    run(box, "z = 1")
    cid = box._pool.active.id
    client.api.kill(cid)
    r = run(box, "z")
    assert not r.ok and "the container died and was replaced" in r.error, r
    still_usable(box)


@pytest.mark.parametrize("name", sorted(PORTABLE_SANDBOX_ATTACKS))
def test_portable_attacks(box, name):
    """The attacks every tier survives the same way (shipped in agentrl.testing)."""
    check_sandbox_attack(box, name)


# -- container escapes -------------------------------------------------------------------------
def test_mount_is_denied(box):
    r = run(
        box,
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "rc = libc.mount(b'none', b'/tmp', b'tmpfs', 0, None)\nprint(rc, os.strerror(ctypes.get_errno()))",
    )
    assert r.ok and r.output == "-1 Operation not permitted\n", r
    r = run(
        box,
        "import subprocess\np = subprocess.run(['mount', '-t', 'tmpfs', 'none', '/mnt'], "
        "capture_output=True)\nprint(p.returncode != 0)",
    )
    assert r.output == "True\n" or not r.ok, r


def test_cannot_raise_limits(box):
    r = run(
        box,
        "import resource\nsoft, hard = resource.getrlimit(resource.RLIMIT_NPROC)\n"
        "resource.setrlimit(resource.RLIMIT_NPROC, (hard + 1, hard + 1))",
    )
    assert not r.ok and ("ValueError" in r.error or "PermissionError" in r.error), r
    r = run(box, "import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))")
    assert not r.ok, r
    still_usable(box)


def test_no_docker_socket(box):
    r = run(
        box,
        "import os\nprint([p for p in ('/var/run/docker.sock', '/run/docker.sock', "
        "'/run/containerd/containerd.sock') if os.path.exists(p)])",
    )
    assert r.ok and r.output == "[]\n", r


def test_no_privilege_escalation(box):
    r = run(box, "import os\nos.setuid(0)")
    assert not r.ok and "PermissionError" in r.error
    r = run(
        box,
        "import subprocess\nprint(subprocess.run(['su', '-c', 'id'], capture_output=True, "
        "input=b'', timeout=5).returncode != 0)",
    )
    assert r.output == "True\n" or not r.ok
    still_usable(box)


def test_tirmath_on_the_docker_tier(daemon, client, image, monkeypatch):
    """``gym.make("AgentRL/TIRMath-v0", sandbox="docker")``: the domain checks pass with code run in containers."""
    from agentrl.testing import check_domain

    monkeypatch.setenv("DOCKER_HOST", daemon.host)  # gym.make copies its kwargs: name the engine, not a client
    kwargs = {"sandbox": "docker", "sandbox_options": {"image": image}}
    before = {c.id for c in ours(client)}  # the module's own sandbox keeps its containers
    check_domain("AgentRL/TIRMath-v0", seeds=(0, 1), make_kwargs=kwargs)
    assert {c.id for c in ours(client)} <= before  # the envs' containers went with close()


def test_remote_server_in_front_of_docker(daemon, image, monkeypatch):
    """The sandbox server runs the docker tier; a RemoteSandbox client gets container isolation over loopback."""
    from agentrl.sandboxes.remote import RemoteSandbox
    from agentrl.sandboxes.server import serve_sandbox

    monkeypatch.setenv("DOCKER_HOST", daemon.host)  # the server's DockerSandbox connects to the private engine
    with serve_sandbox("docker", tokens={"t0k3n": "tests"}) as server, RemoteSandbox(
        server.base_url, token="t0k3n", tier="docker"
    ) as box:
        result = box.execute(ExecutionRequest("import os; print(os.getuid())"))
        assert result.ok and result.output == "1000\n", result
        assert "docker" in box.isolation or "container" in box.isolation


def test_numpy_and_sympy_are_preimported(box):
    """The image carries numpy and sympy, pre-imported like on the process tier (tool-integrated math)."""
    r = run(box, "import numpy, sympy\nprint(int(numpy.arange(4).sum()), sympy.factorint(12))")
    assert r.ok and r.output == "6 {2: 2, 3: 1}\n", r


def test_sandboxfusion_run_code_on_the_docker_tier(daemon):
    """serve-sandbox --tier docker answers /run_code with the same worker: files, stdin, bash, fetch, limits."""
    import base64

    import httpx

    from agentrl.sandboxes.server import serve_sandbox

    with serve_sandbox("docker") as server, httpx.Client(base_url=server.url, timeout=120) as http:

        def run_code(code: str, language: str = "python", **fields) -> dict:
            r = http.post("/run_code", json={"code": code, "language": language, **fields})
            assert r.status_code == 200, r.text
            return r.json()

        r = run_code(
            'read x; echo "$x $(cat in.txt)"; echo e >&2; printf out > out.txt; exit 2',
            "bash",
            stdin="in\n",
            files={"in.txt": base64.b64encode(b"file").decode()},
            fetch_files=["out.txt", "missing"],
        )
        assert r["status"] == "Failed" and r["run_result"]["return_code"] == 2, r
        assert r["run_result"]["stdout"] == "in file\n" and r["run_result"]["stderr"] == "e\n"
        assert r["files"] == {"out.txt": base64.b64encode(b"out").decode()}
        r = run_code("print(input() * 2)", stdin="ab")
        assert r["status"] == "Success" and r["run_result"]["stdout"] == "abab\n"
        assert run_code("while True: pass", run_timeout=0.5)["run_result"]["status"] == "TimeLimitExceeded"
        assert run_code("print(1)", files={"../x": "eA=="})["status"] == "SandboxError"
        # the scratch /tmp is the sandbox uid's own (0700): a run that locks it and its folders does not
        # break the next one, which the worker can only undo on a folder it owns
        lock = "import os\nos.makedirs('d/e')\nos.chmod('d', 0)\nos.chmod('..', 0)\nos.chmod('.', 0)"
        assert run_code(lock)["status"] == "Success"
        look = "import os; s = os.stat('..'); here = os.path.basename(os.getcwd())\n"
        look += "print(os.listdir('.'), os.listdir('..') == [here], os.getuid(), s.st_uid, oct(s.st_mode & 0o7777))"
        r = run_code(look)
        assert r["status"] == "Success" and r["run_result"]["stdout"] == "[] True 1000 1000 0o700\n", r
