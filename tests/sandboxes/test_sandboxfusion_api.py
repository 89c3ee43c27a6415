"""``agentrl serve-sandbox``'s ``POST /run_code``, driven the way a SandboxFusion client drives SandboxFusion.

The request and response shapes are SandboxFusion's (bytedance/SandboxFusion, sandbox/server/sandbox_api.py):
the client below builds its bodies from those field names only, and every answer is checked against the
response model field by field. The server is the real one, on 127.0.0.1.
"""

from __future__ import annotations

import base64
import time
from typing import Any

import httpx
import pytest

from agentrl.sandboxes.server import serve_sandbox

pytestmark = pytest.mark.timeout(120)

TOKEN = "tok-fusion"
RESPONSE_KEYS = {"status", "message", "compile_result", "run_result", "executor_pod_name", "files"}
RUN_RESULT_KEYS = {"status", "execution_time", "return_code", "stdout", "stderr"}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class FusionClient:
    """A minimal SandboxFusion client: ``run_code`` posts SandboxFusion's ``RunCodeRequest`` fields."""

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)

    def post(self, body: dict[str, Any]) -> httpx.Response:
        return self.http.post("/run_code", json=body)

    def run_code(self, code: str, language: str = "python", **fields: Any) -> dict[str, Any]:
        r = self.post({"code": code, "language": language, **fields})
        assert r.status_code == 200, r.text
        out = r.json()
        check_schema(out)
        return out

    def close(self) -> None:
        self.http.close()


def check_schema(resp: dict[str, Any]) -> None:
    """The response is SandboxFusion's ``RunCodeResponse``, exactly: keys, enums and types."""
    assert set(resp) == RESPONSE_KEYS
    assert resp["status"] in ("Success", "Failed", "SandboxError")
    assert isinstance(resp["message"], str)
    assert resp["compile_result"] is None  # python and bash are interpreted
    assert resp["executor_pod_name"] is None or isinstance(resp["executor_pod_name"], str)
    assert isinstance(resp["files"], dict) and all(isinstance(v, str) for v in resp["files"].values())
    run = resp["run_result"]
    if run is not None:
        assert set(run) == RUN_RESULT_KEYS
        assert run["status"] in ("Finished", "Error", "TimeLimitExceeded")
        assert run["execution_time"] is None or isinstance(run["execution_time"], float)
        assert run["return_code"] is None or isinstance(run["return_code"], int)
        for stream in ("stdout", "stderr"):
            assert run[stream] is None or isinstance(run[stream], str)


@pytest.fixture(scope="module", params=["auto", "process"])
def client(request):
    """A server of the default isolation (the bubblewrap fork server where it runs) and one of plain processes."""
    options = {"isolation": request.param}
    with serve_sandbox(tokens={TOKEN: "fusion"}, max_code_chars=100_000, tier_options=options) as server:
        c = FusionClient(server.url)
        try:
            yield c
        finally:
            c.close()


def test_success_has_separate_streams_and_the_exact_schema(client):
    r = client.run_code("import sys\nprint('out')\nprint('err', file=sys.stderr)\n6 * 7", run_timeout=5)
    assert r["status"] == "Success" and r["message"] == "" and r["files"] == {}
    run = r["run_result"]
    assert run["status"] == "Finished" and run["return_code"] == 0
    # A script, as SandboxFusion runs `python file.py`: no echo of the last expression.
    assert run["stdout"] == "out\n" and run["stderr"] == "err\n"
    assert 0 <= run["execution_time"] < 5


def test_files_in_stdin_and_fetch_files_out(client):
    blob = bytes(range(256))
    code = (
        "import os, sys\n"
        "text = open('data/in.txt').read()\n"
        "line = sys.stdin.readline().strip()\n"
        "print(text, line, sorted(os.listdir('.')), os.path.exists('skipped.txt'))\n"
        "os.makedirs('sub', exist_ok=True)\n"
        "open('sub/out.txt', 'w').write(text.upper() + line)\n"
        "data = open('blob.bin', 'rb').read()\n"
        "open('blob.bin', 'wb').write(data[::-1])\n"
    )
    r = client.run_code(
        code,
        stdin="from stdin\nsecond line\n",
        files={"data/in.txt": b64(b"hello"), "blob.bin": b64(blob), "skipped.txt": None},
        fetch_files=["sub/out.txt", "blob.bin", "missing.txt", "sub"],
    )
    assert r["status"] == "Success", r
    assert r["run_result"]["stdout"] == "hello from stdin ['blob.bin', 'data'] False\n"
    # Missing files and folders are left out, as SandboxFusion does; keys are the paths as requested.
    assert set(r["files"]) == {"sub/out.txt", "blob.bin"}
    assert base64.b64decode(r["files"]["sub/out.txt"]) == b"HELLOfrom stdin"
    assert base64.b64decode(r["files"]["blob.bin"]) == blob[::-1]


def test_each_request_gets_a_fresh_working_directory(client):
    assert client.run_code("open('left.txt', 'w').write('x')", fetch_files=["left.txt"])["files"] == {
        "left.txt": b64(b"x")
    }
    r = client.run_code("import os; print(os.listdir('.'))", language="python")
    assert r["run_result"]["stdout"] == "[]\n"
    r = client.run_code("x = 1")
    r = client.run_code("print(x)")
    assert r["status"] == "Failed" and "NameError" in r["run_result"]["stderr"]


def test_bash_with_files_stdin_fetch_and_exit_code(client):
    script = 'read name\necho "hi $name: $(cat in.txt)"\necho oops >&2\nprintf done > out.txt\nexit 3\n'
    r = client.run_code(script, "bash", stdin="bob\n", files={"in.txt": b64(b"payload")}, fetch_files=["out.txt"])
    assert r["status"] == "Failed" and r["message"] == ""
    run = r["run_result"]
    assert run["status"] == "Finished" and run["return_code"] == 3
    assert run["stdout"] == "hi bob: payload\n" and run["stderr"] == "oops\n"
    assert r["files"] == {"out.txt": b64(b"done")}
    assert client.run_code("echo ok", "bash")["status"] == "Success"


def test_bash_runs_in_the_same_sandbox_as_python(client):
    py = client.run_code(
        "import os, resource\n"
        "print(os.getuid(), resource.getrlimit(resource.RLIMIT_FSIZE)[0] // 1024, "
        "resource.getrlimit(resource.RLIMIT_NPROC)[0])"
    )
    sh = client.run_code('echo "$(id -u) $(ulimit -f) $(ulimit -u)"', "bash")
    assert py["status"] == sh["status"] == "Success", (py, sh)
    assert sh["run_result"]["stdout"] == py["run_result"]["stdout"]  # same uid, file-size and process limits


def test_time_limit_exceeded_keeps_output_and_files(client):
    code = "print('started', flush=True)\nopen('partial.txt', 'w').write('so far')\nwhile True: pass\n"
    r = client.run_code(code, run_timeout=0.5, fetch_files=["partial.txt"])
    assert r["status"] == "Failed" and r["message"] == ""
    run = r["run_result"]
    assert run["status"] == "TimeLimitExceeded" and run["return_code"] is None
    assert run["stdout"] == "started\n" and 0.4 < run["execution_time"] < 10
    assert r["files"] == {"partial.txt": b64(b"so far")}
    start = time.monotonic()
    r = client.run_code("echo before; sleep 30 & sleep 30", "bash", run_timeout=0.5)
    assert r["run_result"]["status"] == "TimeLimitExceeded" and r["run_result"]["stdout"] == "before\n"
    assert time.monotonic() - start < 10  # the background sleep was killed with the run
    assert client.run_code("print('next')")["run_result"]["stdout"] == "next\n"


def test_nonzero_exits_are_failed(client):
    r = client.run_code("print('a')\n1 / 0")
    assert r["status"] == "Failed" and r["message"] == ""
    assert r["run_result"]["return_code"] == 1 and r["run_result"]["stdout"] == "a\n"
    assert r["run_result"]["stderr"].startswith("Traceback") and "ZeroDivisionError" in r["run_result"]["stderr"]
    assert client.run_code("import sys; sys.exit(7)")["run_result"]["return_code"] == 7
    r = client.run_code("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert r["status"] == "Failed" and r["run_result"]["return_code"] == -9
    r = client.run_code("def f(:\n")
    assert r["run_result"]["return_code"] == 1 and "SyntaxError" in r["run_result"]["stderr"]


def test_memory_limit_mb(client):
    r = client.run_code("x = bytearray(400 * 1024 * 1024); print('allocated')", memory_limit_MB=64)
    assert r["status"] == "Failed" and "MemoryError" in r["run_result"]["stderr"]
    assert client.run_code("x = bytearray(16 * 1024 * 1024); print('ok')", memory_limit_MB=64)["status"] == "Success"


@pytest.mark.parametrize(
    ("files", "fetch", "words"),
    [
        ({"../escape.txt": "eA=="}, [], "leaves the run's working directory"),
        ({"a/../../escape.txt": "eA=="}, [], "leaves the run's working directory"),
        ({"/tmp/escape.txt": "eA=="}, [], "absolute path '/tmp/escape.txt'"),
        ({}, ["../../etc/passwd"], "fetch_files: path '../../etc/passwd' leaves"),
        ({}, ["/etc/passwd"], "fetch_files: absolute path"),
        ({"in.txt": "not base64!"}, [], "is not valid base64"),
    ],
)
def test_paths_outside_the_working_directory_are_refused(client, files, fetch, words):
    r = client.run_code("print('ran')", files=files, fetch_files=fetch)
    assert r["status"] == "SandboxError" and words in r["message"], r
    assert r["run_result"] is None and r["files"] == {}


def test_languages(client):
    r = client.run_code("int main() {}", "cpp")  # SandboxFusion has it; this server does not
    assert r["status"] == "SandboxError" and r["run_result"] is None
    assert "'cpp' is not served" in r["message"] and "'python', 'bash'" in r["message"]
    # Off SandboxFusion's schema: FastAPI's 422 and its detail list.
    r = client.post({"code": "print(1)", "language": "python3"})
    assert r.status_code == 422
    (issue,) = r.json()["detail"]
    assert issue["loc"] == ["body", "language"] and issue["type"] == "literal_error"
    assert "'python', 'bash'" in issue["msg"]
    r = client.post({"code": 5, "run_timeout": "soon"})
    assert r.status_code == 422
    assert {tuple(d["loc"]) for d in r.json()["detail"]} == {
        ("body", "code"),
        ("body", "language"),
        ("body", "run_timeout"),
    }
    assert client.post({"code": "x" * 200_000, "language": "python"}).status_code == 413



def test_a_run_that_locks_its_folders_does_not_break_the_next(client):
    code = "import os\nos.makedirs('d/e')\nos.chmod('d', 0)\nos.chmod(os.path.dirname(os.getcwd()), 0)\n"
    code += "os.chmod('.', 0)"
    assert client.run_code(code)["status"] == "Success"
    r = client.run_code("import os; print(os.listdir('.'), len(os.listdir('..')))")
    assert r["status"] == "Success" and r["run_result"]["stdout"] == "[] 1\n", r  # the locked folder is gone
