"""The offline asset cache for OSWorld's ``download`` setup step and ``cloud_file`` getter.

Fixture files are served by a local HTTP server on 127.0.0.1 (stopped to play offline); the task files
are in OSWorld's format with those URLs. ``agentrl osworld fetch-assets`` fills the cache, a second run
fetches nothing, the cache serves with the server gone, and a URL not cached is an error naming the URL
and the command. The last test (marked ``desktop``) places a downloaded file on a real desktop.
"""

from __future__ import annotations

import http.server
import json
import shutil
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentrl.cli import main
from agentrl.envs.osworld.tasks.assets import AssetStore, MissingAsset, asset_refs, cloud_file, fetch_assets
from agentrl.envs.osworld.tasks.coverage import coverage, format_coverage
from agentrl.envs.osworld.tasks.format import OSWorldTask, SetupStep, load_task, unsupported
from agentrl.envs.osworld.tasks.setup import SetupError, run_setup

FILES = {
    "/run.sh": b"#!/bin/sh\necho hi\n",
    "/notes.txt": b"meeting at noon\n",
    "/gold.xlsx": b"PK-not-really-a-workbook",
    "/gold-Sheet1.csv": b"a,b\n1,2\n",
    "/post.txt": b"postconfig file\n",
    "/big.bin": b"x" * (3 * 1024 * 1024),
}


class FileServer:
    """``FILES`` over HTTP on 127.0.0.1 in a thread; counts the requests per path."""

    def __init__(self) -> None:
        hits: Counter[str] = Counter()
        self.hits = hits

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                hits[path] += 1
                body = FILES.get(path)
                if body is None:
                    self.send_error(404, "no such fixture")
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return self.base + path

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


@pytest.fixture
def server() -> Iterator[FileServer]:
    srv = FileServer()
    yield srv
    srv.stop()


def download_task(task_id: str, files: list[tuple[str, str]], **evaluator: Any) -> dict[str, Any]:
    """An OSWorld task dict whose config downloads ``files`` ([(url, path)]) and checks with ``evaluator``."""
    ev = evaluator or {"func": "exact_match",
                       "result": {"type": "vm_command_line", "command": "cat ~/run.sh", "shell": True},
                       "expected": {"type": "rule", "rules": {"expected": "x"}}}
    return {"id": task_id, "snapshot": "os", "instruction": "Use the downloaded files.", "source": "test",
            "config": [{"type": "download", "parameters": {"files": [{"url": u, "path": p} for u, p in files]}}],
            "trajectory": "trajectories/", "related_apps": [], "evaluator": ev}


def write_tasks(folder: Path, srv: FileServer) -> Path:
    """Two tasks in ``folder/os/``: download (config + postconfig), cloud_file single and multi."""
    os_dir = folder / "os"
    os_dir.mkdir(parents=True)
    first = download_task("t-download", [(srv.url("/run.sh"), "/home/user/run.sh")])
    first["evaluator"]["postconfig"] = [{"type": "download", "parameters": {
        "files": [{"url": srv.url("/post.txt"), "path": "/home/user/post.txt"}]}}]
    second = download_task(
        "t-cloud", [(srv.url("/notes.txt"), "/home/user/notes.txt"), (srv.url("/run.sh"), "/home/user/again.sh")],
        func=["compare_table", "compare_text_file"],
        result=[{"type": "vm_file", "path": "/home/user/a.xlsx", "dest": "a.xlsx"},
                {"type": "vm_file", "path": "/home/user/notes.txt", "dest": "notes.txt"}],
        expected=[{"type": "cloud_file", "path": [srv.url("/gold.xlsx"), srv.url("/gold-Sheet1.csv")],
                   "dest": ["gold.xlsx", "gold-Sheet1.csv"], "multi": True, "gives": [0, 1]},
                  {"type": "cloud_file", "path": srv.url("/notes.txt"), "dest": "notes_gold.txt"}])
    for task in (first, second):
        (os_dir / f"{task['id']}.json").write_text(json.dumps(task))
    return folder


class RecordingClient:
    """Records the uploads a setup sends (the real desktop is the last test)."""

    def __init__(self) -> None:
        self.uploads: dict[str, bytes] = {}

    def upload_file(self, path: str, data: bytes) -> dict[str, Any]:
        self.uploads[path] = data
        return {"status": "success"}


# -- what tasks fetch --------------------------------------------------------------------------------------------------


def test_asset_refs_and_download_cloud_file_are_supported(tmp_path: Path, server: FileServer) -> None:
    write_tasks(tmp_path, server)
    first, second = (load_task(tmp_path / "os" / f"{name}.json") for name in ("t-download", "t-cloud"))
    assert [(r.where, r.kind) for r in asset_refs(first)] == [("config[0].files[0]", "download"),
                                                              ("evaluator.postconfig[0].files[0]", "download")]
    assert [r.url.rsplit("/", 1)[1] for r in asset_refs(second)] == [
        "notes.txt", "run.sh", "gold.xlsx", "gold-Sheet1.csv", "notes.txt"]
    assert [r.where for r in asset_refs(second)][2:] == ["evaluator.expected[0]"] * 2 + ["evaluator.expected[1]"]
    assert unsupported(first) == [] and unsupported(second) == []


# -- fetch-assets ------------------------------------------------------------------------------------------------------


def test_fetch_assets_fills_the_cache_and_a_second_run_fetches_nothing(
    tmp_path: Path, server: FileServer, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks, cache = write_tasks(tmp_path / "tasks", server), tmp_path / "cache"
    assert main(["osworld", "fetch-assets", str(tasks), "--assets-dir", str(cache)]) == 0
    captured = capsys.readouterr()
    assert "5 fetched" in captured.out and "0 already cached, 0 failed" in captured.out
    assert "2 tasks of" in captured.err and "[1/5] fetched http://127.0.0.1" in captured.err
    index = json.loads((cache / "index.json").read_text())["assets"]
    assert len(index) == 5
    entry = index[server.url("/run.sh")]
    assert entry["size"] == len(FILES["/run.sh"]) and (cache / entry["file"]).read_bytes() == FILES["/run.sh"]
    assert entry["file"] == f"objects/{entry['sha256']}"
    assert not list(cache.glob(".part-*")) and not list(cache.glob(".index-*"))
    before = sum(server.hits.values())
    assert before == 5  # run.sh and notes.txt are named twice, fetched once

    assert main(["osworld", "fetch-assets", str(tasks), "--assets-dir", str(cache), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["fetched"] == [] and len(report["cached"]) == 5 and report["failed"] == {}
    assert sum(server.hits.values()) == before


def test_fetch_assets_reports_failures_with_reasons(
    tmp_path: Path, server: FileServer, capsys: pytest.CaptureFixture[str]
) -> None:
    task = download_task("t-bad", [(server.url("/gone.txt"), "~/a"), ("ftp://example.org/x", "~/b"),
                                   (server.url("/big.bin"), "~/c"), (server.url("/notes.txt"), "~/d")])
    (tmp_path / "t-bad.json").write_text(json.dumps(task))
    cache = tmp_path / "cache"
    code = main(["osworld", "fetch-assets", str(tmp_path / "t-bad.json"), "--assets-dir", str(cache),
                 "--max-mb", "1"])
    out = capsys.readouterr().out
    assert code == 1 and "1 fetched" in out and "3 failed" in out
    assert f"failed {server.url('/gone.txt')}: HTTP 404" in out
    assert "failed ftp://example.org/x: not an http(s) URL" in out
    assert f"failed {server.url('/big.bin')}: {server.url('/big.bin')} is larger than the cap of 1048576" in out
    assert server.hits["/gone.txt"] == 1  # a 404 is not retried
    assert not list(cache.glob(".part-*"))
    assert AssetStore(cache).read(server.url("/notes.txt")) == FILES["/notes.txt"]
    assert main(["osworld", "fetch-assets", str(tmp_path / "nowhere")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


# -- offline ----------------------------------------------------------------------------------------------------------


def test_offline_the_cache_serves_and_a_missing_asset_names_the_url_and_the_command(
    tmp_path: Path, server: FileServer
) -> None:
    store = AssetStore(tmp_path / "cache", source=str(tmp_path / "tasks"))
    ok = fetch_assets([server.url("/run.sh"), server.url("/notes.txt")], store)
    assert len(ok.fetched) == 2
    server.stop()
    offline = fetch_assets([server.url("/run.sh"), server.url("/post.txt")], store, retries=2, backoff_s=0.0,
                           timeout_s=5.0)
    assert offline.cached == [server.url("/run.sh")] and list(offline.failed) == [server.url("/post.txt")]
    assert offline.failed[server.url("/post.txt")].startswith("cannot connect")

    client = RecordingClient()
    step = SetupStep("download", {"files": [{"url": server.url("/run.sh"), "path": "/home/user/run.sh"},
                                            {"url": server.url("/notes.txt"), "path": "~/Desktop/notes.txt"}]})
    run_setup(client, [step], assets=store)
    assert client.uploads == {"/home/user/run.sh": FILES["/run.sh"], "~/Desktop/notes.txt": FILES["/notes.txt"]}

    missing = SetupStep("download", {"files": [{"url": server.url("/post.txt"), "path": "~/post.txt"}]})
    with pytest.raises(SetupError) as caught:
        run_setup(client, [missing], assets=store)
    message = str(caught.value)
    assert server.url("/post.txt") in message and "agentrl osworld fetch-assets" in message
    assert str(tmp_path / "tasks") in message and "setup step 0 (download)" in message
    with pytest.raises(SetupError, match="needs a non-empty 'url' and 'path'"):
        run_setup(client, [SetupStep("download", {"files": [{"url": "", "path": "~/x"}]})], assets=store)

    # a cached file that was deleted or cut short counts as missing, not as an empty file
    (store.root / store.entries()[server.url("/notes.txt")].file).write_bytes(b"cut")
    assert store.lookup(server.url("/notes.txt")) is None
    with pytest.raises(MissingAsset, match=r"notes\.txt is not in the asset cache"):
        store.read(server.url("/notes.txt"))


# -- the cloud_file getter --------------------------------------------------------------------------------------------


def test_cloud_file_single_multi_and_gives(tmp_path: Path) -> None:
    store = AssetStore(tmp_path / "cache")
    urls = [f"https://drive.example/{n}" for n in ("a", "b", "c")]
    for url, body in zip(urls, (b"A", b"B", b"C"), strict=True):
        store.put(url, body)
    out = tmp_path / "episode"
    single = cloud_file({"type": "cloud_file", "path": urls[0], "dest": "gold.xlsx"}, store, out)
    assert single == str(out / "gold.xlsx") and Path(single).read_bytes() == b"A"
    multi = {"type": "cloud_file", "path": urls, "dest": ["a.xlsx", "b.csv", "c.csv"], "multi": True}
    assert cloud_file(multi, store, out) == str(out / "a.xlsx")  # gives defaults to [0]: one path, a string
    assert cloud_file({**multi, "gives": [2, 1]}, store, out) == [str(out / "b.csv"), str(out / "c.csv")]
    assert cloud_file({**multi, "gives": []}, store, out) == []
    assert (out / "c.csv").read_bytes() == b"C"  # every file is placed, given or not (as OSWorld downloads all)
    Path(single).write_bytes(b"changed by a metric")
    assert store.read(urls[0]) == b"A"  # a copy: the cache is untouched
    assert cloud_file({"path": urls[0], "dest": "../../escape.txt"}, store, out) == str(out / "escape.txt")
    with pytest.raises(MissingAsset, match=r"https://drive.example/zzz .*agentrl osworld fetch-assets PATH"):
        cloud_file({"path": "https://drive.example/zzz", "dest": "z"}, store, out)
    with pytest.raises(ValueError, match="same length"):
        cloud_file({**multi, "dest": ["a"]}, store, out)
    with pytest.raises(ValueError, match="must be a file name"):
        cloud_file({"path": urls[0], "dest": ""}, store, out)


# -- the store ---------------------------------------------------------------------------------------------------------


def test_concurrent_writers_lose_no_entry(tmp_path: Path) -> None:
    store_root = tmp_path / "cache"

    def writer(n: int) -> None:
        store = AssetStore(store_root)  # each its own object, as separate processes would be
        for i in range(6):
            store.put(f"https://h/{n}/{i}", f"{n}-{i}".encode() if i else b"shared body")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    store = AssetStore(store_root)
    assert len(store.entries()) == 36
    assert store.read("https://h/3/4") == b"3-4" and store.read("https://h/5/0") == b"shared body"
    assert len(list((store_root / "objects").iterdir())) == 31  # the six identical bodies share one file
    assert (store_root / "index.json").read_text().startswith("{")


def test_default_location_follows_agentrl_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTRL_CACHE", str(tmp_path))
    assert AssetStore().root == tmp_path / "osworld" / "assets"
    monkeypatch.delenv("AGENTRL_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert AssetStore().root == tmp_path / "home" / ".cache" / "agentrl" / "osworld" / "assets"


def test_coverage_says_which_assets_are_cached(tmp_path: Path, server: FileServer) -> None:
    tasks = write_tasks(tmp_path / "tasks", server)
    store = AssetStore(tmp_path / "cache")
    fetch_assets([server.url("/run.sh"), server.url("/post.txt")], store)
    report = coverage(tasks, installed=None, assets=store)
    assert report.totals() == (2, 2) and report.assets() == (2, 5)
    rows = {row.id: row for row in report.rows}
    assert rows["t-download"].missing_assets == () and len(rows["t-cloud"].missing_assets) == 3
    text = format_coverage(report)
    assert "(assets not cached: 3 of 4)" in text
    assert "assets: 2 of the 5 files the tasks fetch are cached" in text and "1 supported tasks wait" in text
    assert f"agentrl osworld fetch-assets {tasks}" in text
    data = report.as_dict()
    assert data["assets"]["cached"] == 2 and data["assets"]["urls"] == 5
    assert "cache not checked" in format_coverage(coverage(tasks, installed=None))


# -- on a real desktop -------------------------------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_download_step_places_the_file_on_a_real_desktop(
    tmp_path: Path, server: FileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("Xvfb") is None:
        pytest.skip("needs Xvfb (apt-get install xvfb)")
    pytest.importorskip("mss", reason="mss is missing: pip install 'agentrl-gym[desktop]'")
    from agentrl.envs.osworld.env import OSWorldEnv

    monkeypatch.setenv("AGENTRL_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "tasks" / "os"
    folder.mkdir(parents=True)
    good = download_task(
        "t-place", [(server.url("/notes.txt"), "/home/user/Desktop/notes.txt")],
        func="compare_text_file", result={"type": "vm_file", "path": "/home/user/Desktop/notes.txt", "dest": "n.txt"},
        expected={"type": "cloud_file", "path": server.url("/notes.txt"), "dest": "gold.txt"})
    absent = download_task("t-absent", [(server.url("/post.txt"), "/home/user/post.txt")])
    for task in (good, absent):
        (folder / f"{task['id']}.json").write_text(json.dumps(task))
    assert main(["osworld", "fetch-assets", str(folder / "t-place.json")]) == 0
    server.stop()  # from here on: offline

    env = OSWorldEnv(tasks=str(tmp_path / "tasks"), pause_s=0.0, obs_type="a11y_tree")
    try:
        env.reset(options={"task_id": "t-place"})
        assert env.client.read_file("~/Desktop/notes.txt") == FILES["/notes.txt"]
        _, reward, terminated, _, info = env.step("DONE")
        assert terminated and reward == 1.0, info.get("eval_details")
        with pytest.raises(MissingAsset, match=r"t-absent.*post\.txt is not in the asset cache.*fetch-assets"):
            env.reset(options={"task_id": "t-absent"})
    finally:
        env.close()


def test_task_in_osworld_format_parses() -> None:
    task = OSWorldTask.from_dict(download_task("t", [("https://h/x", "/home/user/x")]))
    assert task.config[0].type == "download" and unsupported(task) == []
