"""OSWorld's VLC's config and state, and the audio/video metrics.

Getters are ``getter(client, spec)`` (``client``: a :class:`~agentrl.envs.osworld.client.DesktopClient`);
metrics keep OSWorld's signature ``metric(result, expected_or_rules, **options) -> float``.
The two dicts below are merged by :mod:`agentrl.envs.osworld.evaluators`.

Getters (the ``type`` of a ``result``/``expected`` object):

========================  ================================================================================
``vlc_config``            local copy (``dest``) of the desktop's ``~/.config/vlc/vlcrc``; ``None`` if absent
``vlc_playing_info``      local copy (``dest``) of ``status.xml`` from VLC's HTTP interface (port 8080,
                          password ``password``), asked from inside the desktop's sandbox
``vm_screen_size``        ``{"width", "height"}`` of the screen
``vm_window_size``        ``{"width", "height"}`` of the window of class ``app_class_name``, else ``None``
``vm_wallpaper``          local copy (``dest``) of the wallpaper image, else ``None``
``default_video_player``  the ``.desktop`` file ``xdg-mime`` names most often for OSWorld's video types
========================  ================================================================================

VLC's HTTP interface is not on by default. OSWorld's VM image turns it on in VLC's preferences (main
interface ``Web``, Lua HTTP password ``password``); on this desktop VLC must be started with
:data:`HTTP_INTERFACE_ARGS` for ``vlc_playing_info`` to answer.

The config metrics read ``vlcrc``: ``# comment`` lines, ``[section]`` headers, ``key=value`` for a setting
the user changed and ``#key=value`` for one left at VLC's default (VLC writes the default there). A key
with no active line has its commented default, else the default OSWorld assumes.

The media metrics decode with Debian's ``ffmpeg`` (``apt-get install -y ffmpeg``) instead of OpenCV and
librosa, and redo the math of ``imagehash.phash`` and of librosa's MFCCs with numpy/scipy.
"""

from __future__ import annotations

import base64
import logging
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any
from xml.etree import ElementTree

import numpy as np

from agentrl.core.errors import DependencyNotInstalled
from agentrl.envs.osworld.evaluators.general import match_value_to_rule
from agentrl.envs.osworld.runtime import programs
from agentrl.envs.osworld.runtime.apps import VLC_HTTP_FLAGS, VLC_HTTP_PASSWORD, VLC_HTTP_PORT

__all__ = [
    "GETTERS",
    "HTTP_INTERFACE_ARGS",
    "METRICS",
    "check_global_key_play_pause",
    "check_mp3_meta",
    "check_one_instance_when_started_from_file",
    "check_qt_bgcone",
    "check_qt_max_volume",
    "check_qt_minimal_view",
    "check_qt_slider_colours",
    "compare_audios",
    "compare_videos",
    "dtw_cosine_distance",
    "is_vlc_fullscreen",
    "is_vlc_playing",
    "is_vlc_recordings_folder",
    "parse_vlcrc",
    "phash",
    "vlcrc_value",
]

LOG = logging.getLogger("agentrl.osworld.vlc")


OSWORLD_HOME = "/home/user"
"""HOME on OSWorld's VM; the desktop's file routes read it as the desktop's HOME."""


VLCRC_PATH = f"{OSWORLD_HOME}/.config/vlc/vlcrc"
"""Where VLC keeps its preferences on Linux (OSWorld reads ``~/.config/vlc/vlcrc``)."""


# VLC's HTTP interface as OSWorld's VM image has it: how the desktop starts VLC (flags are not saved to vlcrc).
HTTP_PORT, HTTP_PASSWORD, HTTP_INTERFACE_ARGS = VLC_HTTP_PORT, VLC_HTTP_PASSWORD, VLC_HTTP_FLAGS


VIDEO_SUBTYPES: tuple[str, ...] = (
    "3gp", "3gpp", "3gpp2", "avi", "divx", "dv", "fli", "flv", "mp2t", "mp4", "mp4v-es", "mpeg", "mpeg-system",
    "msvideo", "ogg", "quicktime", "vnd.divx", "vnd.mpegurl", "vnd.rn-realvideo", "webm", "x-anim", "x-avi",
    "x-flc", "x-fli", "x-flv", "x-m4v", "x-matroska", "x-mpeg", "x-mpeg-system", "x-mpeg2", "x-ms-asf",
    "x-ms-asf-plugin", "x-ms-asx", "x-ms-wm", "x-ms-wmv", "x-ms-wmx", "x-ms-wvx", "x-msvideo", "x-nsv", "x-ogm",
    "x-ogm+ogg", "x-theora", "x-theora+ogg",
)  # fmt: skip
"""The ``video/*`` MIME subtypes OSWorld asks ``xdg-mime`` about for ``default_video_player``."""


FFMPEG_HINT = "apt-get install -y ffmpeg"


def parse_vlcrc(text: str) -> tuple[dict[str, str], dict[str, str]]:
    r"""``(active, defaults)``: the ``key=value`` settings of a vlcrc, and its commented ``#key=value`` defaults.

    Keys are global in VLC (each module prefixes its own), so sections are not part of the key.

    >>> parse_vlcrc("[qt] # Qt interface\n# Maximum Volume displayed (integer)\n#qt-max-volume=125\nqt-bgcone=0\n")
    ({'qt-bgcone': '0'}, {'qt-max-volume': '125'})
    """
    active: dict[str, str] = {}
    defaults: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip().lstrip("\ufeff")  # VLC starts the file with a UTF-8 byte order mark
        if not line or line.startswith("["):
            continue
        table = active
        if line.startswith("#"):
            line = line[1:]
            table = defaults
            # "# Maximum Volume displayed (integer)" is prose; "#qt-max-volume=125" is a default
            if not line or line[0].isspace():
                continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if sep and key and " " not in key:
            table.setdefault(key, value.strip())
    return active, defaults


def vlcrc_value(text: str, key: str, default: str) -> str:
    r"""The value VLC uses for ``key``: its active line, else its commented default, else ``default``.

    >>> vlcrc_value("#qt-max-volume=125\n", "qt-max-volume", "125")
    '125'
    >>> vlcrc_value("#qt-max-volume=125\nqt-max-volume=200\n", "qt-max-volume", "125")
    '200'
    >>> vlcrc_value("", "qt-bgcone", "1")
    '1'
    """
    active, defaults = parse_vlcrc(text)
    if key in active:
        return active[key]
    return defaults.get(key, default)


def _read_text(path: Any) -> str | None:
    if not path:
        return None
    try:
        return Path(str(path)).read_bytes().decode("utf-8", errors="replace")
    except OSError as error:
        LOG.warning("cannot read %s: %s", path, error)
        return None


def _expected(rule: Any, key: str) -> str | None:
    """``rule[key]`` as a string (OSWorld's rules give ints: ``{"expected_qt_bgcone": 0}``)."""
    if not isinstance(rule, Mapping) or key not in rule:
        LOG.warning("the rule has no %r: %r", key, rule)
        return None
    return str(rule[key])


def _setting_is(config_path: Any, rule: Any, rule_key: str, key: str, default: str) -> float:
    text = _read_text(config_path)
    expected = _expected(rule, rule_key)
    if text is None or expected is None:
        return 0.0
    return float(vlcrc_value(text, key, default) == expected)


def is_vlc_recordings_folder(config_path: Any, rule: Any, **options: Any) -> float:
    r"""1 if vlcrc's active ``input-record-path`` is ``rule["recording_file_path"]`` (a commented default is not).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "vlcrc")
    >>> _ = open(path, "w").write("#input-record-path=\ninput-record-path=/home/user/Desktop\n")
    >>> is_vlc_recordings_folder(path, {"recording_file_path": "/home/user/Desktop"})
    1.0
    >>> is_vlc_recordings_folder(path, {"recording_file_path": "/home/user/Videos"})
    0.0
    """
    text = _read_text(config_path)
    expected = _expected(rule, "recording_file_path")
    if text is None or expected is None:
        return 0.0
    active, _ = parse_vlcrc(text)
    if "input-record-path" not in active:  # OSWorld skips comments: VLC's default is no folder set
        return 0.0
    return float(active["input-record-path"] == expected)


def check_qt_bgcone(config_path: Any, rule: Any, **options: Any) -> float:
    r"""1 if ``qt-bgcone`` (the background cone or art; default ``1``) is ``rule["expected_qt_bgcone"]``.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "vlcrc")
    >>> _ = open(path, "w").write("[qt]\n#qt-bgcone=1\nqt-bgcone=0\n")
    >>> check_qt_bgcone(path, {"expected_qt_bgcone": 0}), check_qt_bgcone(path, {"expected_qt_bgcone": 1})
    (1.0, 0.0)
    >>> check_qt_bgcone(None, {"expected_qt_bgcone": 0})
    0.0
    """
    return _setting_is(config_path, rule, "expected_qt_bgcone", "qt-bgcone", "1")


def check_qt_max_volume(config_path: Any, rule: Any, **options: Any) -> float:
    r"""1 if ``qt-max-volume`` (default ``125``) is ``rule["expected_qt_max_volume"]``.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "vlcrc")
    >>> _ = open(path, "w").write("#qt-max-volume=125\n")
    >>> check_qt_max_volume(path, {"expected_qt_max_volume": 125})
    1.0
    >>> check_qt_max_volume(path, {"expected_qt_max_volume": 200})
    0.0
    """
    return _setting_is(config_path, rule, "expected_qt_max_volume", "qt-max-volume", "125")


def check_qt_minimal_view(config_path: Any, rule: Any, **options: Any) -> float:
    r"""1 if ``qt-minimal-view`` (default ``0``) is ``rule["expected_qt_minimal_view"]``.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "vlcrc")
    >>> _ = open(path, "w").write("qt-minimal-view=1\n")
    >>> check_qt_minimal_view(path, {"expected_qt_minimal_view": 1})
    1.0
    >>> check_qt_minimal_view(path, {})  # the rule lacks its key
    0.0
    """
    return _setting_is(config_path, rule, "expected_qt_minimal_view", "qt-minimal-view", "0")


def check_one_instance_when_started_from_file(config_path: Any, rule: Any, **options: Any) -> float:
    r"""1 if ``one-instance-when-started-from-file`` (default ``1``) is the rule's expected value.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "vlcrc")
    >>> _ = open(path, "w").write("one-instance-when-started-from-file=0\n")
    >>> check_one_instance_when_started_from_file(path, {"expected_one_instance_when_started_from_file": 0})
    1.0
    >>> check_one_instance_when_started_from_file(path, {"expected_one_instance_when_started_from_file": 1})
    0.0
    """
    key = "one-instance-when-started-from-file"
    return _setting_is(config_path, rule, f"expected_{key.replace('-', '_')}", key, "1")


def check_global_key_play_pause(config_path: Any, rule: Any, **options: Any) -> float:
    r"""1 if a global Play/Pause hotkey is set (``1``) or not (``0``) as ``rule["expected_global_key_play_pause"]``.

    ``global-key-play-pause=`` (empty, VLC's default) is ``0``; any key (``global-key-play-pause=Space``) is ``1``.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "vlcrc")
    >>> _ = open(path, "w").write("#global-key-play-pause=\nglobal-key-play-pause=Space\n")
    >>> check_global_key_play_pause(path, {"expected_global_key_play_pause": 1})
    1.0
    >>> check_global_key_play_pause(path, {"expected_global_key_play_pause": 0})
    0.0
    """
    text = _read_text(config_path)
    expected = _expected(rule, "expected_global_key_play_pause")
    if text is None or expected is None:
        return 0.0
    is_set = "1" if vlcrc_value(text, "global-key-play-pause", "") else "0"
    return float(is_set == expected)


SLIDER_COLOURS_DEFAULT = "153;210;153;20;210;20;255;199;15;245;39;29"


def check_qt_slider_colours(config_path: Any, rule: Any, **options: Any) -> float:
    """1 if ``qt-slider-colours`` matches the rule.

    ``{"type": "match", "expected_qt_slider_colours": "r;g;b;..."}``: the same string;
    ``{"type": "blackish"}``: every ``r;g;b`` triple has all three channels below 100.

    >>> _slider_score("0;0;0;20;20;20;50;50;50;99;99;99", {"type": "blackish"})
    1.0
    >>> _slider_score(SLIDER_COLOURS_DEFAULT, {"type": "blackish"})
    0.0
    """
    text = _read_text(config_path)
    if text is None or not isinstance(rule, Mapping):
        return 0.0
    return _slider_score(vlcrc_value(text, "qt-slider-colours", SLIDER_COLOURS_DEFAULT), rule)


def _slider_score(colours: str, rule: Mapping[str, Any]) -> float:
    kind = rule.get("type")
    if kind == "match":
        return float(colours == str(rule.get("expected_qt_slider_colours")))
    if kind == "blackish":
        try:
            values = [int(part) for part in colours.split(";")]
        except ValueError:
            LOG.warning("qt-slider-colours is not numbers: %r", colours)
            return 0.0
        triples = list(zip(values[0::3], values[1::3], values[2::3], strict=False))
        return float(bool(triples) and all(all(v < 100 for v in rgb) for rgb in triples))
    LOG.warning("check_qt_slider_colours: unknown rule type %r", kind)
    return 0.0


def is_vlc_fullscreen(window_size: Any, screen_size: Any, **options: Any) -> float:
    """1 if the two ``{"width", "height"}`` sizes are equal (VLC's window covers the screen).

    >>> is_vlc_fullscreen({"width": 1920, "height": 1080}, {"width": 1920, "height": 1080})
    1.0
    >>> is_vlc_fullscreen({"width": 800, "height": 600}, {"width": 1920, "height": 1080})
    0.0
    >>> is_vlc_fullscreen(None, {"width": 1920, "height": 1080})
    0.0
    """
    if not isinstance(window_size, Mapping) or not isinstance(screen_size, Mapping):
        return 0.0
    try:
        return float(
            int(window_size["width"]) == int(screen_size["width"])
            and int(window_size["height"]) == int(screen_size["height"])
        )
    except (KeyError, TypeError, ValueError):
        return 0.0


def is_vlc_playing(status_path: Any, rule: Any, **options: Any) -> float:
    """1 if VLC's ``status.xml`` says ``playing`` the file or URL the rule names.

    ``{"type": "file_name", "file_name": NAME}``: the ``meta`` ``filename`` ends with NAME;
    ``{"type": "url", "url": URL}``: the ``meta`` ``url`` ends with URL.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "status.xml")
    >>> meta = "<category name='meta'><info name='filename'>song.mp3</info></category>"
    >>> _ = open(path, "w").write(f"<root><state>playing</state><information>{meta}</information></root>")
    >>> is_vlc_playing(path, {"type": "file_name", "file_name": "song.mp3"})
    1.0
    >>> is_vlc_playing(path, {"type": "file_name", "file_name": "other.mp3"})
    0.0
    >>> is_vlc_playing(None, {"type": "file_name", "file_name": "song.mp3"})
    0.0
    """
    text = _read_text(status_path)
    if text is None or not isinstance(rule, Mapping):
        return 0.0
    try:
        root = ElementTree.fromstring(text.encode("utf-8"))
    except ElementTree.ParseError as error:
        LOG.warning("status.xml is not XML: %s", error)
        return 0.0
    if (root.findtext("state") or "").strip() != "playing":
        return 0.0
    kind = rule.get("type")
    if kind not in ("file_name", "url"):
        LOG.warning("is_vlc_playing: unknown rule type %r", kind)
        return 0.0
    field = "filename" if kind == "file_name" else "url"
    value = root.findtext(f"information/category[@name='meta']/info[@name='{field}']")
    if not value:
        return 0.0
    return float(value.strip().endswith(str(rule.get(kind))))


def _cache_path(client: Any, spec: Mapping[str, Any], fallback: str) -> Path:
    name = Path(str(spec.get("dest") or fallback)).name or fallback  # never escape the cache dir
    return Path(client.cache_dir) / name


def _desktop_home(client: Any) -> str | None:
    """The desktop's real HOME (OSWorld's ``/home/user``); ``None`` when it cannot be asked."""
    try:
        answer = client.execute(["printenv", "HOME"], timeout_s=10)
    except Exception as error:  # a getter never fails for want of this: the file is just not rewritten
        LOG.info("cannot ask the desktop's HOME: %s", error)
        return None
    home = str(answer.get("output") or "").strip()
    return home if answer.get("returncode") == 0 and home.startswith("/") else None


def _as_osworld_home(text: str, home: str | None) -> str:
    """``text`` with active values under the desktop's ``home`` written under ``/home/user`` instead."""
    home = (home or "").rstrip("/")
    if not home or home == OSWORLD_HOME:
        return text
    lines = []
    for line in text.splitlines(keepends=True):
        if not line.lstrip().startswith(("#", "[")):
            key, sep, value = line.partition("=")
            if sep and (value.strip() == home or value.strip().startswith(home + "/")):
                line = f"{key}={OSWORLD_HOME}{value.strip()[len(home) :]}\n"
        lines.append(line)
    return "".join(lines)


def vlc_config(client: Any, spec: Mapping[str, Any]) -> str | None:
    """The local path of a copy of the desktop's ``~/.config/vlc/vlcrc``; ``None`` when VLC saved none.

    Paths under the desktop's HOME in its settings read as under ``/home/user``, as on OSWorld's VM.
    """
    data = client.read_file(VLCRC_PATH)
    if data is None:
        return None
    text = _as_osworld_home(data.decode("utf-8", errors="replace"), _desktop_home(client))
    local = _cache_path(client, spec, "vlcrc")
    local.write_text(text, encoding="utf-8")
    return str(local)


def vlc_playing_info(client: Any, spec: Mapping[str, Any]) -> str | None:
    """The local path of VLC's ``/requests/status.xml``; ``None`` when VLC's HTTP interface does not answer.

    VLC listens on the loopback of the desktop's sandbox, so the request runs there:
    :mod:`~agentrl.envs.osworld.runtime.programs.vlc_status`, ``python3 -c <its text> <port> <password>``.
    """
    argv = ["python3", "-c", programs.source("vlc_status"), str(HTTP_PORT), HTTP_PASSWORD]
    answer = client.execute(argv, timeout_s=20)
    if answer.get("returncode") != 0:
        LOG.warning("vlc_playing_info: %s", str(answer.get("error") or answer.get("output"))[-500:])
        return None
    try:
        data = base64.b64decode(str(answer.get("output") or "").strip(), validate=True)
    except ValueError:
        return None
    if not data:
        return None
    local = _cache_path(client, spec, "status.xml")
    local.write_bytes(data)
    return str(local)


def vm_screen_size(client: Any, spec: Mapping[str, Any]) -> dict[str, int]:
    """``{"width", "height"}`` of the desktop's screen."""
    width, height = client.screen_size()
    return {"width": int(width), "height": int(height)}


def _http_status(error: Exception) -> int | None:
    code = getattr(error, "code", None)
    return code if isinstance(code, int) else None


def vm_window_size(client: Any, spec: Mapping[str, Any]) -> dict[str, int] | None:
    """``{"width", "height"}`` of the window of class ``spec["app_class_name"]``; ``None`` when there is none."""
    try:
        size = client._json("POST", "/window_size", {"app_class_name": spec["app_class_name"]})
    except OSError as error:  # urllib's HTTPError is an OSError: 404 (no such window), 400
        if _http_status(error) in (400, 404):
            return None
        raise
    if not isinstance(size, Mapping) or "width" not in size or "height" not in size:
        return None
    return {"width": int(size["width"]), "height": int(size["height"])}


def vm_wallpaper(client: Any, spec: Mapping[str, Any]) -> str | None:
    """The local path (``dest``) of the desktop's wallpaper image; ``None`` when no wallpaper is set."""
    try:
        data = client._request("POST", "/wallpaper")
    except OSError as error:
        if _http_status(error) == 404:
            return None
        raise
    if not data:
        return None
    local = _cache_path(client, spec, "wallpaper.png")
    local.write_bytes(data)
    return str(local)


def default_video_player(client: Any, spec: Mapping[str, Any]) -> str:
    """The ``.desktop`` file ``xdg-mime query default`` names for most of :data:`VIDEO_SUBTYPES`, else ``unknown``.

    One shell command asks for every type (OSWorld makes one request per type).
    """
    types = " ".join(f"video/{subtype}" for subtype in VIDEO_SUBTYPES)
    script = f'for t in {types}; do printf "%s\\n" "$(xdg-mime query default "$t" 2>/dev/null)"; done'
    answer = client.execute(script, shell=True, timeout_s=60)
    apps = [line.strip() for line in str(answer.get("output") or "").splitlines() if line.strip()]
    if not apps:
        return "unknown"
    return Counter(apps).most_common(1)[0][0]


def _ffmpeg() -> str:
    path = shutil.which("ffmpeg")
    if path is None:
        raise DependencyNotInstalled("ffmpeg", command=FFMPEG_HINT)
    return path


def _media_ok(path: Any) -> bool:
    if not path or not Path(str(path)).is_file():
        LOG.warning("no media file at %r", path)
        return False
    return True


def _decode_audio(path: str, sample_rate: int) -> np.ndarray | None:
    """Mono float32 PCM at ``sample_rate`` (librosa.load's defaults: channels averaged); ``None`` if undecodable."""
    argv = [_ffmpeg(), "-nostdin", "-v", "error", "-i", path, "-vn", "-ac", "1", "-ar", str(sample_rate)]
    done = subprocess.run([*argv, "-f", "f32le", "-"], capture_output=True, timeout=600, check=False)
    if done.returncode != 0:
        LOG.warning("ffmpeg cannot decode the audio of %s: %s", path, done.stderr.decode(errors="replace")[-300:])
        return None
    return np.frombuffer(done.stdout, dtype="<f4").astype(np.float64)


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale (librosa's default, ``htk=False``): linear below 1 kHz, logarithmic above."""
    mel = hz / (200.0 / 3)
    log_part = hz >= 1000.0
    return np.where(log_part, 15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / (np.log(6.4) / 27.0), mel)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    hz = mel * (200.0 / 3)
    return np.where(mel >= 15.0, 1000.0 * np.exp((np.log(6.4) / 27.0) * (mel - 15.0)), hz)


def _mel_filters(sample_rate: int, n_fft: int, n_mels: int) -> np.ndarray:
    """``(n_mels, 1 + n_fft // 2)`` triangular filters, Slaney-normalised (librosa.filters.mel's defaults)."""
    fft_freqs = np.linspace(0.0, sample_rate / 2.0, 1 + n_fft // 2)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(np.array(0.0)), _hz_to_mel(np.array(sample_rate / 2.0)), n_mels + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / widths[:-1, None]
    upper = ramps[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    return weights * (2.0 / (edges[2:] - edges[:-2]))[:, None]


def _mfcc(samples: np.ndarray, sample_rate: int, n_mfcc: int = 20, n_fft: int = 2048, hop: int = 512) -> np.ndarray:
    """``(frames, n_mfcc)`` MFCCs as ``librosa.feature.mfcc`` computes them with its defaults.

    Centred frames (zero padding), periodic Hann window, power spectrum, 128 Slaney mel bands, dB with an
    80 dB floor below the peak, orthonormal DCT-II.
    """
    from scipy.fft import dct
    from scipy.signal import get_window

    padded = np.pad(samples, n_fft // 2)
    if padded.size < n_fft:
        return np.zeros((0, n_mfcc))
    frames = np.lib.stride_tricks.sliding_window_view(padded, n_fft)[::hop]
    window = get_window("hann", n_fft, fftbins=True)
    filters = _mel_filters(sample_rate, n_fft, 128)
    mel = np.concatenate(
        [  # in chunks: a whole song's frames at once would take hundreds of MB
            (np.abs(np.fft.rfft(frames[start : start + 1024] * window, axis=1)) ** 2) @ filters.T
            for start in range(0, len(frames), 1024)
        ]
    )
    db = 10.0 * np.log10(np.maximum(mel, 1e-10))
    db = np.maximum(db, db.max() - 80.0)
    coefficients: np.ndarray = dct(db, type=2, norm="ortho", axis=1)[:, :n_mfcc]
    return coefficients


def _normalize_columns(features: np.ndarray) -> np.ndarray:
    """Each coefficient scaled to max |value| 1 over time (``librosa.util.normalize(mfcc, axis=1)``)."""
    peak = np.abs(features).max(axis=0, initial=0.0)
    return features / np.where(peak < np.finfo(np.float32).tiny, 1.0, peak)


def _unit_rows(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    norms = np.linalg.norm(features, axis=1)
    zero = norms == 0
    return features / np.where(zero, 1.0, norms)[:, None], zero


def dtw_cosine_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Dynamic time warping distance of two ``(frames, dims)`` sequences under cosine distance.

    Steps ``(1, 0)``, ``(0, 1)``, ``(1, 1)``, each adding the cosine distance of the cell (fastdtw's path
    cost, computed exactly here). A row at a time: along a row ``D[j] = c[j] + min(D[j-1], a[j])`` unrolls to
    ``S[j] + min_{k<=j}(a[k] - S[k-1])`` with ``S`` the running sum of ``c``, one ``minimum.accumulate``.

    >>> x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> dtw_cosine_distance(x, x)
    0.0
    >>> round(dtw_cosine_distance(x, x[[0, 0, 1, 2]]), 6)
    0.0
    >>> round(dtw_cosine_distance(x[:1], x[1:2]), 6)
    1.0
    """
    ua, zero_a = _unit_rows(np.asarray(a, dtype=np.float64))
    ub, zero_b = _unit_rows(np.asarray(b, dtype=np.float64))
    if len(ua) == 0 or len(ub) == 0:
        return float("inf")
    previous: np.ndarray | None = None
    for start in range(0, len(ua), 256):
        block = 1.0 - ua[start : start + 256] @ ub.T
        # a zero vector: distance 0 to another zero vector, else 1 (scipy's cosine would give nan)
        block[zero_a[start : start + 256]] = 1.0
        block[:, zero_b] = 1.0
        block[np.ix_(zero_a[start : start + 256], zero_b)] = 0.0
        block[block < 1e-12] = 0.0  # rounding of 1 - x.x
        for costs in block:
            sums = np.cumsum(costs)
            if previous is None:
                previous = sums
                continue
            reach = np.minimum(previous, np.concatenate(([np.inf], previous[:-1])))
            shifted = np.concatenate(([0.0], sums[:-1]))
            previous = sums + np.minimum.accumulate(reach - shifted)
    assert previous is not None
    distance = float(previous[-1])
    return 0.0 if distance < 1e-6 else distance  # cancellation in the running sums, not a difference


def compare_audios(audio_path_1: Any, audio_path_2: Any, **options: Any) -> float:
    """``1 / (1 + DTW distance)`` of the two recordings' normalised MFCCs: 1 for the same audio, near 0 otherwise.

    As OSWorld: 22.05 kHz mono, 20 MFCCs per 512-sample hop, each coefficient scaled to max |value| 1,
    cosine distance between frames summed along the best time alignment.

    A missing file scores 0 (before ffmpeg is needed):

    >>> compare_audios(None, "/nonexistent/expected.mp3")
    0.0
    """
    if not _media_ok(audio_path_1) or not _media_ok(audio_path_2):
        return 0.0
    sample_rate = 22050
    first = _decode_audio(str(audio_path_1), sample_rate)
    second = _decode_audio(str(audio_path_2), sample_rate)
    if first is None or second is None or first.size == 0 or second.size == 0:
        return 0.0
    features_1 = _normalize_columns(_mfcc(first, sample_rate))
    features_2 = _normalize_columns(_mfcc(second, sample_rate))
    return 1.0 / (1.0 + dtw_cosine_distance(features_1, features_2))


def _read_ppm_frames(stream: IO[bytes]) -> Iterator[np.ndarray]:
    r"""RGB frames from ffmpeg's ``image2pipe`` PPM stream (each ``P6\nW H\n255\n`` then the pixels)."""
    while True:
        magic = stream.readline()
        if not magic:
            return
        if magic.strip() != b"P6":
            raise ValueError(f"unexpected PPM header {magic[:20]!r}")
        width, height = (int(v) for v in stream.readline().split())
        stream.readline()  # maxval 255
        size = width * height * 3
        data = stream.read(size)
        if len(data) < size:
            return
        yield np.frombuffer(data, dtype=np.uint8).reshape(height, width, 3)


def phash(rgb: np.ndarray) -> np.ndarray:
    """``imagehash.phash``'s 64 bits: grey, 32x32 Lanczos, 2-D DCT-II, the 8x8 low block above its median.

    >>> flat = np.zeros((40, 40, 3), dtype=np.uint8)
    >>> phash(flat).shape, int(phash(flat).sum())
    ((8, 8), 0)
    """
    from PIL import Image
    from scipy.fft import dct

    grey = Image.fromarray(np.ascontiguousarray(rgb)).convert("L").resize((32, 32), Image.Resampling.LANCZOS)
    pixels = np.asarray(grey, dtype=np.float64)
    low = dct(dct(pixels, axis=0), axis=1)[:8, :8]
    bits: np.ndarray = low > np.median(low)
    return bits


def _video_hashes(path: str, limit: int) -> list[np.ndarray] | None:
    """The phashes of the first ``limit`` frames of ``path``; ``None`` when ffmpeg cannot decode it."""
    argv = [_ffmpeg(), "-nostdin", "-v", "error", "-i", path, "-map", "0:v:0", "-frames:v", str(limit)]
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            [*argv, "-f", "image2pipe", "-c:v", "ppm", "-"], stdout=subprocess.PIPE, stderr=errors
        )
        assert process.stdout is not None
        try:
            hashes = [phash(frame) for frame in _read_ppm_frames(process.stdout)]
        finally:
            process.stdout.close()
            code = process.wait(timeout=600)
        if code != 0:
            errors.seek(0)
            LOG.warning("ffmpeg cannot decode the video of %s: %s", path, errors.read().decode(errors="replace")[-300:])
            return None
    return hashes


def compare_videos(
    video_path1: Any, video_path2: Any, max_frames_to_check: int = 100, threshold: int = 5, **options: Any
) -> float:
    """1 if the two videos show the same frames: OSWorld's perceptual-hash check of the first frames.

    Frame by frame, up to ``max_frames_to_check``: a pair whose phashes differ in more than ``threshold``
    bits is a mismatch, and more than ``threshold`` mismatches score 0. A video that ends before
    ``max_frames_to_check`` frames must end together with the other.

    A missing file scores 0 (before ffmpeg is needed):

    >>> compare_videos("/nonexistent/result.mp4", "/nonexistent/expected.mp4")
    0.0
    """
    if not _media_ok(video_path1) or not _media_ok(video_path2):
        return 0.0
    limit, allowed = int(max_frames_to_check), int(threshold)
    first = _video_hashes(str(video_path1), limit)
    second = _video_hashes(str(video_path2), limit)
    if first is None or second is None:
        return 0.0
    mismatches = 0
    for hash_1, hash_2 in zip(first, second, strict=False):
        if int(np.count_nonzero(hash_1 != hash_2)) > allowed:
            mismatches += 1
            if mismatches > allowed:
                return 0.0
    return float(len(first) == len(second))  # both capped at the limit, or both ended at the same frame


def check_mp3_meta(result: Any, meta: Any, **options: Any) -> float:
    """1 if every ID3 field of ``meta`` (``{"title": {"method": "eq", "ref": "..."}}``) matches the file's tag.

    Fields are EasyID3 names (``title``, ``artist``, ``album``...); a multi-valued field is joined with
    ``,``; a missing one is ``""``. Methods are those of
    :func:`~agentrl.envs.osworld.evaluators.general.match_value_to_rule`.

    No result file (the getter found none) scores 0 without reading any tag:

    >>> check_mp3_meta(None, {"title": {"method": "eq", "ref": "Song"}})
    0.0
    """
    if result is None or not isinstance(meta, Mapping):
        return 0.0
    try:
        from mutagen import MutagenError
        from mutagen.easyid3 import EasyID3
    except ImportError as error:
        raise DependencyNotInstalled("mutagen", extra="osworld-office") from error
    try:
        tags = EasyID3(str(result))
    except (MutagenError, OSError, ValueError) as error:
        LOG.warning("no ID3 tag in %s: %s", result, error)
        return 0.0
    for key, rule in meta.items():
        value = tags.get(key, "")
        if isinstance(value, list):
            value = ",".join(value)
        if not match_value_to_rule(value, rule):
            return 0.0
    return 1.0


GETTERS: dict[str, Callable[..., Any]] = {
    "default_video_player": default_video_player,
    "vlc_config": vlc_config,
    "vlc_playing_info": vlc_playing_info,
    "vm_screen_size": vm_screen_size,
    "vm_wallpaper": vm_wallpaper,
    "vm_window_size": vm_window_size,
}
"""OSWorld getter type -> ``getter(client, spec)``."""


METRICS: dict[str, Callable[..., float]] = {
    "check_global_key_play_pause": check_global_key_play_pause,
    "check_mp3_meta": check_mp3_meta,
    "check_one_instance_when_started_from_file": check_one_instance_when_started_from_file,
    "check_qt_bgcone": check_qt_bgcone,
    "check_qt_max_volume": check_qt_max_volume,
    "check_qt_minimal_view": check_qt_minimal_view,
    "check_qt_slider_colours": check_qt_slider_colours,
    "compare_audios": compare_audios,
    "compare_videos": compare_videos,
    "is_vlc_fullscreen": is_vlc_fullscreen,
    "is_vlc_playing": is_vlc_playing,
    "is_vlc_recordings_folder": is_vlc_recordings_folder,
}
"""OSWorld metric name -> ``metric(result, expected_or_rules, **options)``."""
