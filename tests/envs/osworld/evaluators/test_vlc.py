"""OSWorld's VLC getters and metrics (agentrl/envs/osworld/evaluators/vlc.py), on fixtures in their real formats.

A vlcrc as VLC 3 writes it, VLC's HTTP ``status.xml``, PNGs made with Pillow, media made with ffmpeg's lavfi
sources, MP3s tagged with mutagen. Getters run against a fake desktop client that serves a tmp HOME. The
evaluator objects at the end are copied in shape from OSWorld's evaluation_examples (vlc, multi_apps).
"""

from __future__ import annotations

import base64
import http.server
import io
import os
import shutil
import subprocess
import sys
import threading
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agentrl.envs.osworld.evaluators import GETTERS, METRICS, vlc
from agentrl.envs.osworld.runtime import programs
from agentrl.envs.osworld.tasks.evaluate import evaluate
from agentrl.envs.osworld.tasks.format import OSWorldTask

FFMPEG = shutil.which("ffmpeg")
needs_ffmpeg = pytest.mark.skipif(FFMPEG is None, reason="ffmpeg not installed: apt-get install -y ffmpeg")

# VLC 3.0's vlcrc: a banner, "[module] # description" sections, "# Description (type)" prose, every setting
# left at its default written commented out ("#key=default"), a changed setting written "key=value"; a BOM first.
VLCRC_DEFAULT = """\ufeff###
###  vlc 3.0.24
###

###
### lines beginning with a '#' character are comments
###

[visual] # Visualizer filter

# Goom display width (integer)
#goom-width=800

[qt] # Qt interface

# Start in minimal view (without menus) (boolean)
#qt-minimal-view=0

# Display background cone or art (boolean)
#qt-bgcone=1

# Expanding background cone or art (boolean)
#qt-bgcone-expands=0

# Maximum Volume displayed (integer)
#qt-max-volume=125

# Define the colors of the volume slider (string)
#qt-slider-colours=153;210;153;20;210;20;255;199;15;245;39;29

[core] # core program

# Record directory (string)
#input-record-path=

# Use only one instance when started from file manager (boolean)
#one-instance-when-started-from-file=1

# Play/Pause (string)
#global-key-play-pause=

# Play/Pause (string)
#key-play-pause=Space
"""

CHANGED = {
    "#qt-minimal-view=0": "qt-minimal-view=1",
    "#qt-bgcone=1": "qt-bgcone=0",
    "#qt-max-volume=125": "qt-max-volume=200",
    "#qt-slider-colours=153;210;153;20;210;20;255;199;15;245;39;29": "qt-slider-colours=0;0;0;20;20;20;40;40;40;0;0;0",
    "#input-record-path=": "input-record-path={home}/Desktop",
    "#one-instance-when-started-from-file=1": "one-instance-when-started-from-file=0",
    "#global-key-play-pause=": "global-key-play-pause=Space",
}


def changed_vlcrc(home: str) -> str:
    text = VLCRC_DEFAULT
    for old, new in CHANGED.items():
        text = text.replace(old, new.format(home=home))
    return text


STATUS_XML = """<?xml version="1.0" encoding="utf-8" standalone="yes" ?>
<root>
<fullscreen>false</fullscreen>
<apiversion>3</apiversion>
<currentplid>3</currentplid>
<time>12</time>
<volume>256</volume>
<length>212</length>
<state>{state}</state>
<version>3.0.18 Vetinari</version>
<position>0.056</position>
<information>
  <category name="meta">
    <info name='filename'>{filename}</info>
    {url}
  </category>
  <category name='Stream 0'>
    <info name='Type'>Video</info>
    <info name='Codec'>H264 - MPEG-4 AVC (part 10) (avc1)</info>
  </category>
</information>
</root>
"""

RICK = "Rick Astley - Never Gonna Give You Up (Official Music Video).mp4"


def status_xml(state: str = "playing", filename: str = RICK, url: str | None = None) -> str:
    info = f"<info name='url'>{url}</info>" if url else ""
    return STATUS_XML.format(state=state, filename=filename, url=info)


class FakeClient:
    """A DesktopClient stand-in: ``/home/user`` is ``home``; a few commands are answered as the desktop would."""

    def __init__(self, tmp: Path, *, screen: tuple[int, int] = (1920, 1080)) -> None:
        self.home = tmp / "home"
        self.home.mkdir()
        self.cache_dir = tmp / "cache"
        self.cache_dir.mkdir()
        self.screen = screen
        self.windows: dict[str, dict[str, int]] = {}
        self.wallpaper: bytes | None = None
        self.status: str | None = None
        self.bin = tmp / "bin"
        self.bin.mkdir()

    def _local(self, path: str) -> Path:
        if path.startswith("/home/user"):
            return self.home / path[len("/home/user/") :]
        return Path(path)

    def write(self, path: str, text: str) -> None:
        local = self._local(path)
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_text(text, encoding="utf-8")

    def read_file(self, path: str) -> bytes | None:
        local = self._local(path)
        return local.read_bytes() if local.is_file() else None

    def screen_size(self) -> tuple[int, int]:
        return self.screen

    def execute(self, command: Any, shell: bool = False, timeout_s: float | None = None) -> dict[str, Any]:
        if command == ["printenv", "HOME"]:
            return {"output": f"{self.home}\n", "error": "", "returncode": 0}
        if isinstance(command, list) and command[:2] == ["python3", "-c"]:  # the status.xml request
            assert command[2:] == [programs.source("vlc_status"), str(vlc.HTTP_PORT), vlc.HTTP_PASSWORD], command[3:]
            if self.status is None:
                return {"output": "", "error": "VLC's HTTP interface did not answer", "returncode": 1}
            return {"output": base64.b64encode(self.status.encode()).decode(), "error": "", "returncode": 0}
        if shell and isinstance(command, str):  # run for real, with the test's fake xdg-mime first on PATH
            env = {**os.environ, "PATH": f"{self.bin}:{os.environ.get('PATH', '')}"}
            done = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, env=env, check=False)
            return {"output": done.stdout, "error": done.stderr, "returncode": done.returncode}
        raise AssertionError(f"unexpected command {command!r}")

    def _request(self, method: str, path: str, body: Any = None) -> bytes:
        assert (method, path) == ("POST", "/wallpaper")
        if self.wallpaper is None:
            raise urllib.error.HTTPError(path, 404, "Wallpaper file not found", None, io.BytesIO())  # type: ignore[arg-type]
        return self.wallpaper

    def _json(self, method: str, path: str, body: Any = None) -> Any:
        assert (method, path) == ("POST", "/window_size")
        size = self.windows.get(body["app_class_name"])
        if size is None:
            raise urllib.error.HTTPError(path, 404, "no window", None, io.BytesIO())  # type: ignore[arg-type]
        return size


@pytest.fixture
def client(tmp_path: Path) -> FakeClient:
    return FakeClient(tmp_path)


def vlcrc_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "vlcrc"
    path.write_text(text, encoding="utf-8")
    return str(path)


# -- vlcrc ------------------------------------------------------------------------------------------------------------


def test_parse_vlcrc_separates_settings_defaults_and_prose() -> None:
    active, defaults = vlc.parse_vlcrc(changed_vlcrc("/home/user"))
    assert active["qt-max-volume"] == "200" and active["global-key-play-pause"] == "Space"
    assert defaults["key-play-pause"] == "Space" and defaults["goom-width"] == "800"
    assert not any(" " in key or key.startswith(("#", "\ufeff")) for key in [*active, *defaults])
    assert vlc.parse_vlcrc("\ufeffqt-bgcone=0\n")[0] == {"qt-bgcone": "0"}
    assert vlc.vlcrc_value(VLCRC_DEFAULT, "qt-bgcone", "1") == "1"
    assert vlc.vlcrc_value(changed_vlcrc("/x"), "qt-bgcone", "1") == "0"


@pytest.mark.parametrize(
    ("metric", "rule"),
    [
        (vlc.check_qt_bgcone, {"expected_qt_bgcone": 0}),
        (vlc.check_qt_max_volume, {"expected_qt_max_volume": 200}),
        (vlc.check_qt_minimal_view, {"expected_qt_minimal_view": 1}),
        (vlc.check_one_instance_when_started_from_file, {"expected_one_instance_when_started_from_file": 0}),
        (vlc.check_global_key_play_pause, {"expected_global_key_play_pause": 1}),
        (vlc.check_qt_slider_colours, {"type": "blackish"}),
        (vlc.is_vlc_recordings_folder, {"recording_file_path": "/home/user/Desktop"}),
    ],
)
def test_config_metrics_score_the_changed_setting(tmp_path: Path, metric: Any, rule: dict[str, Any]) -> None:
    assert metric(vlcrc_file(tmp_path, changed_vlcrc("/home/user")), rule) == 1.0
    assert metric(vlcrc_file(tmp_path, VLCRC_DEFAULT), rule) == 0.0  # every setting at VLC's default
    assert metric(None, rule) == 0.0
    assert metric(str(tmp_path / "missing"), rule) == 0.0


def test_config_metrics_read_defaults_when_vlcrc_has_no_line(tmp_path: Path) -> None:
    empty = vlcrc_file(tmp_path, "[qt] # Qt interface\n")
    assert vlc.check_qt_bgcone(empty, {"expected_qt_bgcone": 1}) == 1.0
    assert vlc.check_qt_max_volume(empty, {"expected_qt_max_volume": "125"}) == 1.0
    assert vlc.check_qt_minimal_view(empty, {"expected_qt_minimal_view": 0}) == 1.0
    assert vlc.check_one_instance_when_started_from_file(empty, {"expected_one_instance_when_started_from_file": 1})
    assert vlc.check_global_key_play_pause(empty, {"expected_global_key_play_pause": 0}) == 1.0
    assert vlc.is_vlc_recordings_folder(empty, {"recording_file_path": ""}) == 0.0


def test_slider_colours_match_and_bad_values(tmp_path: Path) -> None:
    path = vlcrc_file(tmp_path, changed_vlcrc("/home/user"))
    assert vlc.check_qt_slider_colours(
        path, {"type": "match", "expected_qt_slider_colours": "0;0;0;20;20;20;40;40;40;0;0;0"}
    )
    assert vlc.check_qt_slider_colours(path, {"type": "match", "expected_qt_slider_colours": "1;1;1"}) == 0.0
    assert vlc.check_qt_slider_colours(path, {"type": "reddish"}) == 0.0
    bad = vlcrc_file(tmp_path, "qt-slider-colours=black\n")
    assert vlc.check_qt_slider_colours(bad, {"type": "blackish"}) == 0.0


def test_vlc_config_getter_copies_vlcrc_and_maps_home(client: FakeClient) -> None:
    assert vlc.vlc_config(client, {"type": "vlc_config", "dest": "vlcrc"}) is None  # VLC never saved preferences
    client.write("/home/user/.config/vlc/vlcrc", changed_vlcrc(str(client.home)))
    path = vlc.vlc_config(client, {"type": "vlc_config", "dest": "vlcrc"})
    assert path == str(client.cache_dir / "vlcrc")
    text = Path(path).read_text()
    assert "input-record-path=/home/user/Desktop\n" in text and str(client.home) not in text
    assert vlc.is_vlc_recordings_folder(path, {"recording_file_path": "/home/user/Desktop"}) == 1.0
    assert vlc.is_vlc_recordings_folder(path, {"recording_file_path": "/home/user/Videos"}) == 0.0


# -- VLC's HTTP status ------------------------------------------------------------------------------------------------


def test_is_vlc_playing_file_name_and_url(tmp_path: Path) -> None:
    path = tmp_path / "status.xml"
    by_name = {"type": "file_name", "file_name": RICK}
    by_url = {"type": "url", "url": "https://www.youtube.com/watch?v=pgBsyTKAwLw"}
    path.write_text(status_xml())
    assert vlc.is_vlc_playing(str(path), by_name) == 1.0
    assert vlc.is_vlc_playing(str(path), by_url) == 0.0  # no url in meta
    path.write_text(status_xml(state="paused"))
    assert vlc.is_vlc_playing(str(path), by_name) == 0.0
    path.write_text(status_xml(filename="other.mp4"))
    assert vlc.is_vlc_playing(str(path), by_name) == 0.0
    path.write_text(status_xml(filename="watch?v=pgBsyTKAwLw", url="https://www.youtube.com/watch?v=pgBsyTKAwLw"))
    assert vlc.is_vlc_playing(str(path), by_url) == 1.0
    path.write_text("<html>401 Unauthorized")
    assert vlc.is_vlc_playing(str(path), by_name) == 0.0
    assert vlc.is_vlc_playing(None, by_name) == 0.0


def test_vlc_playing_info_getter(client: FakeClient) -> None:
    spec = {"type": "vlc_playing_info", "dest": "status.xml"}
    assert vlc.vlc_playing_info(client, spec) is None  # VLC's HTTP interface is off
    client.status = status_xml()
    path = vlc.vlc_playing_info(client, spec)
    assert path == str(client.cache_dir / "status.xml") and Path(path).read_text() == status_xml()


@pytest.fixture
def fake_vlc_http() -> Iterator[tuple[int, list[str]]]:
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(f"{self.path} {self.headers.get('Authorization')}")
            if self.headers.get("Authorization") != "Basic " + base64.b64encode(b":password").decode():
                self.send_response(401)
                self.end_headers()
                return
            body = status_xml().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], seen
    server.shutdown()
    server.server_close()


def test_status_script_asks_vlc_with_its_password(fake_vlc_http: tuple[int, list[str]]) -> None:
    port, seen = fake_vlc_http
    script = programs.source("vlc_status")  # as vlc_playing_info runs it, on the fake's port
    done = subprocess.run([sys.executable, "-c", script, str(port), vlc.HTTP_PASSWORD], capture_output=True,
                          text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert base64.b64decode(done.stdout).decode() == status_xml()
    assert seen[0].startswith("/requests/status.xml Basic ")
    done = subprocess.run([sys.executable, "-c", script, str(port), "wrong"], capture_output=True, text=True,
                          timeout=30, check=False)
    assert done.returncode != 0 and "did not answer" in done.stderr
    assert "--http-password=password" in vlc.HTTP_INTERFACE_ARGS


# -- screen, window, wallpaper, default player ------------------------------------------------------------------------


def test_screen_and_window_size_getters_and_fullscreen(client: FakeClient) -> None:
    screen = vlc.vm_screen_size(client, {"type": "vm_screen_size"})
    assert screen == {"width": 1920, "height": 1080}
    spec = {"type": "vm_window_size", "app_class_name": "vlc"}
    assert vlc.vm_window_size(client, spec) is None  # no VLC window
    client.windows["vlc"] = {"width": 1920, "height": 1080}
    window = vlc.vm_window_size(client, spec)
    assert vlc.is_vlc_fullscreen(screen, window) == 1.0
    client.windows["vlc"] = {"width": 1280, "height": 720}
    assert vlc.is_vlc_fullscreen(screen, vlc.vm_window_size(client, spec)) == 0.0
    assert vlc.is_vlc_fullscreen(screen, {"width": 1920}) == 0.0


def test_vm_wallpaper_getter(client: FakeClient) -> None:
    spec = {"type": "vm_wallpaper", "dest": "../result_wallpaper.png"}
    assert vlc.vm_wallpaper(client, spec) is None
    buffer = io.BytesIO()
    Image.new("RGB", (64, 36), (10, 20, 200)).save(buffer, format="PNG")
    client.wallpaper = buffer.getvalue()
    path = vlc.vm_wallpaper(client, spec)
    assert path == str(client.cache_dir / "result_wallpaper.png")  # dest never escapes the cache dir
    with Image.open(path) as image:
        assert image.size == (64, 36) and image.getpixel((0, 0)) == (10, 20, 200)


def fake_xdg_mime(client: FakeClient, answers: dict[str, str]) -> None:
    cases = "\n".join(f'  "{mime}") echo {app} ;;' for mime, app in answers.items())
    script = client.bin / "xdg-mime"
    script.write_text(f'#!/bin/sh\n[ "$1 $2" = "query default" ] || exit 2\ncase "$3" in\n{cases}\nesac\n')
    script.chmod(0o755)


def test_default_video_player_takes_the_most_common(client: FakeClient) -> None:
    fake_xdg_mime(client, {})
    assert vlc.default_video_player(client, {"type": "default_video_player"}) == "unknown"
    answers = {f"video/{t}": "vlc.desktop" for t in ("mp4", "webm", "x-matroska", "mpeg", "quicktime")}
    answers["video/x-msvideo"] = "org.gnome.Totem.desktop"
    fake_xdg_mime(client, answers)
    assert vlc.default_video_player(client, {"type": "default_video_player"}) == "vlc.desktop"
    fake_xdg_mime(client, {"video/mp4": "org.gnome.Totem.desktop", "video/webm": "org.gnome.Totem.desktop"})
    assert vlc.default_video_player(client, {"type": "default_video_player"}) == "org.gnome.Totem.desktop"


# -- media ------------------------------------------------------------------------------------------------------------


def ffmpeg(*args: str) -> None:
    assert FFMPEG is not None
    subprocess.run([FFMPEG, "-nostdin", "-v", "error", "-y", *args], check=True, timeout=60)


@needs_ffmpeg
def test_compare_audios(tmp_path: Path) -> None:
    sine, noise = str(tmp_path / "sine.mp3"), str(tmp_path / "noise.wav")
    ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:duration=2", sine)
    ffmpeg("-f", "lavfi", "-i", "anoisesrc=d=2:c=pink:seed=3", noise)
    copy = tmp_path / "copy.mp3"
    shutil.copy(sine, copy)
    assert vlc.compare_audios(sine, str(copy)) == 1.0
    assert vlc.compare_audios(noise, noise) == 1.0
    assert vlc.compare_audios(sine, noise) < 0.1
    assert vlc.compare_audios(sine, None) == 0.0
    (tmp_path / "junk.mp3").write_bytes(b"not audio")
    assert vlc.compare_audios(sine, str(tmp_path / "junk.mp3")) == 0.0


@needs_ffmpeg
def test_compare_videos(tmp_path: Path) -> None:
    video, flipped, short = (str(tmp_path / f"{n}.mp4") for n in ("video", "flipped", "short"))
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=160x120:rate=10:duration=3", "-pix_fmt", "yuv420p", video)
    ffmpeg("-i", video, "-vf", "hflip", "-pix_fmt", "yuv420p", flipped)
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=160x120:rate=10:duration=2", "-pix_fmt", "yuv420p", short)
    assert vlc.compare_videos(video, video) == 1.0
    assert vlc.compare_videos(flipped, video) == 0.0  # the task: flip the video back
    assert vlc.compare_videos(short, video) == 0.0  # ends 10 frames early
    assert vlc.compare_videos(short, video, max_frames_to_check=15) == 1.0  # the same first 15 frames
    assert vlc.compare_videos(video, None) == 0.0


def test_media_metrics_name_ffmpeg_when_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vlc.shutil, "which", lambda name: None)
    media = tmp_path / "a.mp3"
    media.write_bytes(b"x")
    with pytest.raises(ImportError, match="apt-get install -y ffmpeg"):
        vlc.compare_audios(str(media), str(media))
    with pytest.raises(ImportError, match="apt-get install -y ffmpeg"):
        vlc.compare_videos(str(media), str(media))


def tagged_mp3(path: Path, **tags: str) -> str:
    mutagen = pytest.importorskip("mutagen.easyid3", reason="mutagen is not installed: pip install mutagen")
    if FFMPEG:
        ffmpeg("-f", "lavfi", "-i", "anullsrc=r=22050:cl=mono", "-t", "0.2", str(path))
    else:  # one silent MPEG-1 Layer III frame (128 kbit/s, 44.1 kHz)
        path.write_bytes(b"\xff\xfb\x90\x64" + bytes(413))
    tag = mutagen.EasyID3()
    for key, value in tags.items():
        tag[key] = value
    tag.save(str(path))
    return str(path)


def test_check_mp3_meta(tmp_path: Path) -> None:
    song = tagged_mp3(tmp_path / "song.mp3", title="Missing You", artist="Cheng Xiang")
    rules = {"title": {"method": "eq", "ref": "Missing You"}, "artist": {"method": "eq", "ref": "Cheng Xiang"}}
    assert vlc.check_mp3_meta(song, rules) == 1.0
    assert vlc.check_mp3_meta(song, {**rules, "artist": {"method": "eq", "ref": "Han Baoyi"}}) == 0.0
    assert vlc.check_mp3_meta(song, {"album": {"method": "eq", "ref": "x"}}) == 0.0  # no album: ""
    assert vlc.check_mp3_meta(song, {"title": {"method": "re.I", "ref": "^missing"}}) == 1.0
    (tmp_path / "bare.mp3").write_bytes(b"\xff\xfb\x90\x64" + bytes(413))
    assert vlc.check_mp3_meta(str(tmp_path / "bare.mp3"), rules) == 0.0  # no ID3 tag
    assert vlc.check_mp3_meta(None, rules) == 0.0


# -- the real tasks' shapes -------------------------------------------------------------------------------------------

# (evaluator, what the desktop holds for it to score 1) copied in shape from OSWorld's task files
CONFIG_TASKS = [
    {"func": "check_qt_bgcone", "expected": {"type": "rule", "rules": {"expected_qt_bgcone": 0}},
     "result": {"type": "vlc_config", "dest": "vlcrc"}},
    {"func": "check_global_key_play_pause",
     "expected": {"type": "rule", "rules": {"expected_global_key_play_pause": 1}},
     "result": {"type": "vlc_config", "dest": "vlcrc"}},
    {"func": "is_vlc_recordings_folder",
     "expected": {"type": "rule", "rules": {"recording_file_path": "/home/user/Desktop"}},
     "result": {"type": "vlc_config", "dest": "vlcrc"}},
    {"func": "check_qt_max_volume", "expected": {"type": "rule", "rules": {"expected_qt_max_volume": 200}},
     "result": {"type": "vlc_config", "dest": "vlcrc"}},
    {"func": "check_qt_minimal_view", "expected": {"type": "rule", "rules": {"expected_qt_minimal_view": 1}},
     "result": {"type": "vlc_config", "dest": "vlcrc"}},
    {"func": "check_qt_slider_colours", "expected": {"type": "rule", "rules": {"type": "blackish"}},
     "result": {"type": "vlc_config", "dest": "vlcrc"}},
    {"func": "check_one_instance_when_started_from_file",
     "expected": {"type": "rule", "rules": {"expected_one_instance_when_started_from_file": 0}},
     "result": {"type": "vlc_config", "dest": "vlcrc"}},
]  # fmt: skip

OTHER_TASKS = [
    {"func": "is_vlc_playing",
     "expected": {"type": "rule", "rules": {"type": "file_name", "file_name": RICK}},
     "result": {"type": "vlc_playing_info", "dest": "status.xml"}},
    {"func": "is_vlc_fullscreen", "expected": {"type": "vm_window_size", "app_class_name": "vlc"},
     "result": {"type": "vm_screen_size"}},
    {"func": "check_include_exclude", "result": {"type": "default_video_player"},
     "expected": {"type": "rule", "rules": {"include": ["vlc.desktop"]}}},
    {"func": "compare_images", "result": {"type": "vm_wallpaper", "dest": "background.png"},
     "expected": {"type": "vm_file", "path": "/home/user/gold_background.png", "dest": "gold_background.png"}},
    {"func": ["check_mp3_meta", "check_mp3_meta"],
     "result": [{"type": "vm_file", "path": "/home/user/Music/Cheng Xiang - Missing You.mp3",
                 "dest": "Cheng Xiang - Missing You.mp3"},
                {"type": "vm_file", "path": "/home/user/Music/Zhou Xuan - Nights in Shanghai.mp3",
                 "dest": "Zhou Xuan - Nights in Shanghai.mp3"}],
     "expected": [{"type": "rule", "rules": {"title": {"method": "eq", "ref": "Missing You"},
                                             "artist": {"method": "eq", "ref": "Cheng Xiang"}}},
                  {"type": "rule", "rules": {"title": {"method": "eq", "ref": "Nights in Shanghai"},
                                             "artist": {"method": "eq", "ref": "Zhou Xuan"}}}]},
]  # fmt: skip

MEDIA_TASKS = [
    {"func": "compare_audios",
     "expected": {"type": "vm_file", "path": "/home/user/gold/baby_gold.mp3", "dest": "baby_gold.mp3"},
     "result": {"type": "vm_file", "path": "/home/user/Desktop/Baby Justin Bieber.mp3", "dest": "baby.mp3"}},
    {"func": "compare_videos",
     "expected": {"type": "vm_file", "path": "/home/user/gold/1984_gold.mp4", "dest": "1984_gold.mp4"},
     "result": {"type": "vm_file", "path": "1984_Apple_Macintosh_Commercial.mp4",
                "dest": "1984_Apple_Macintosh_Commercial.mp4"}},
]  # fmt: skip


def run_task(client: FakeClient, evaluator: dict[str, Any]) -> float:
    task = OSWorldTask.from_dict({"id": "t", "instruction": "x", "evaluator": evaluator})

    def get(spec: dict[str, Any]) -> Any:
        if spec["type"] == "vm_file":
            path = spec["path"] if spec["path"].startswith("/") else f"/home/user/{spec['path']}"
            data = client.read_file(path)
            if data is None:
                return None
            local = client.cache_dir / spec["dest"]
            local.write_bytes(data)
            return str(local)
        return GETTERS[spec["type"]](client, spec)

    score, details = evaluate(task, last_action="DONE", get=get)
    assert all(d["error"] is None for d in details) or score == 0.0, details
    return score


def test_every_registered_name_is_used_by_a_real_task_shape() -> None:
    used: set[str] = set()
    for evaluator in [*CONFIG_TASKS, *OTHER_TASKS, *MEDIA_TASKS]:
        funcs = evaluator["func"] if isinstance(evaluator["func"], list) else [evaluator["func"]]
        specs = [evaluator["result"], evaluator["expected"]]
        used |= set(funcs) | {s["type"] for spec in specs for s in (spec if isinstance(spec, list) else [spec])}
    assert set(vlc.GETTERS) <= used and set(vlc.METRICS) <= used
    for name in vlc.METRICS:
        assert METRICS[name] is vlc.METRICS[name]
    for name in vlc.GETTERS:
        assert GETTERS[name] is vlc.GETTERS[name]


@pytest.mark.parametrize("evaluator", CONFIG_TASKS, ids=[e["func"] for e in CONFIG_TASKS])
def test_config_tasks_score_through_the_evaluator(client: FakeClient, evaluator: dict[str, Any]) -> None:
    assert run_task(client, evaluator) == 0.0  # VLC saved no preferences
    client.write("/home/user/.config/vlc/vlcrc", VLCRC_DEFAULT)
    assert run_task(client, evaluator) == 0.0
    client.write("/home/user/.config/vlc/vlcrc", changed_vlcrc(str(client.home)))
    assert run_task(client, evaluator) == 1.0


def test_other_tasks_score_through_the_evaluator(client: FakeClient) -> None:
    playing, fullscreen, player, wallpaper, mp3 = OTHER_TASKS
    assert run_task(client, playing) == 0.0
    client.status = status_xml()
    assert run_task(client, playing) == 1.0

    client.windows["vlc"] = {"width": 1280, "height": 720}
    assert run_task(client, fullscreen) == 0.0
    client.windows["vlc"] = {"width": 1920, "height": 1080}
    assert run_task(client, fullscreen) == 1.0

    fake_xdg_mime(client, {"video/mp4": "org.gnome.Totem.desktop"})
    assert run_task(client, player) == 0.0
    fake_xdg_mime(client, {"video/mp4": "vlc.desktop", "video/webm": "vlc.desktop"})
    assert run_task(client, player) == 1.0

    image = Image.new("RGB", (96, 54), (0, 0, 0))
    image.paste((255, 200, 0), (0, 0, 48, 54))
    image.save(client.home / "gold_background.png")
    assert run_task(client, wallpaper) == 0.0  # no wallpaper set
    client.wallpaper = (client.home / "gold_background.png").read_bytes()
    assert run_task(client, wallpaper) == 1.0

    music = client.home / "Music"
    music.mkdir()
    tagged_mp3(music / "Cheng Xiang - Missing You.mp3", title="Missing You", artist="Cheng Xiang")
    tagged_mp3(music / "Zhou Xuan - Nights in Shanghai.mp3", title="Nights in Shanghai", artist="Unknown")
    assert run_task(client, mp3) == 0.0
    tagged_mp3(music / "Zhou Xuan - Nights in Shanghai.mp3", title="Nights in Shanghai", artist="Zhou Xuan")
    assert run_task(client, mp3) == 1.0


@needs_ffmpeg
def test_media_tasks_score_through_the_evaluator(client: FakeClient) -> None:
    audio, video = MEDIA_TASKS
    for folder in ("gold", "Desktop"):
        (client.home / folder).mkdir()
    ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:duration=1", str(client.home / "gold/baby_gold.mp3"))
    ffmpeg("-f", "lavfi", "-i", "sine=frequency=660:duration=1", str(client.home / "Desktop/Baby Justin Bieber.mp3"))
    assert run_task(client, audio) < 0.1
    shutil.copy(client.home / "gold/baby_gold.mp3", client.home / "Desktop/Baby Justin Bieber.mp3")
    assert run_task(client, audio) == 1.0

    gold = str(client.home / "gold/1984_gold.mp4")
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=160x120:rate=10:duration=1", "-pix_fmt", "yuv420p", gold)
    ffmpeg("-i", gold, "-vf", "vflip", "-pix_fmt", "yuv420p", str(client.home / "1984_Apple_Macintosh_Commercial.mp4"))
    assert run_task(client, video) == 0.0
    shutil.copy(gold, client.home / "1984_Apple_Macintosh_Commercial.mp4")
    assert run_task(client, video) == 1.0
