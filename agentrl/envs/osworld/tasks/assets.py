r"""An offline store of the files OSWorld tasks fetch from the network, keyed by URL.

OSWorld's ``download`` setup step (``{"files": [{"url", "path"}]}``) fetches each URL and uploads it to
the VM at ``path``; its ``cloud_file`` getter (``{"path": URL | [URL...], "dest": NAME | [NAME...],
"multi", "gives"}``) fetches gold files to the host for the metric. Both go to Google Drive or Hugging
Face on every run. Here the files are fetched once, by ``agentrl osworld fetch-assets PATH``
(:func:`fetch_assets`), into an :class:`AssetStore`; episodes read them from there and never touch the
network. A URL that is not in the store is a :class:`MissingAsset` error that names the URL and the
command that fetches it.

Layout of the store (``$AGENTRL_CACHE/osworld/assets``, else ``~/.cache/agentrl/osworld/assets``)::

    objects/<sha256 of the content>    the files, content-addressed (two URLs with one body share one)
    index.json                         {"version": 1, "assets": {url: {"file", "sha256", "size"}}}
    index.lock                         flock'ed while the index is rewritten (replace-on-write, so readers
                                       never see half an index; concurrent fetchers lose no entry)

>>> import tempfile
>>> store = AssetStore(tempfile.mkdtemp())
>>> entry = store.put("https://example.org/a.txt", b"hello")
>>> entry.size, store.read("https://example.org/a.txt")
(5, b'hello')
>>> store.read("https://example.org/b.txt")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
agentrl.envs.osworld.tasks.assets.MissingAsset: OSWorld asset https://example.org/b.txt is not in the asset cache ...
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shlex
import shutil
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrl.core.errors import AgentRLError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "AssetEntry",
    "AssetRef",
    "AssetStore",
    "FetchReport",
    "MissingAsset",
    "asset_refs",
    "cloud_file",
    "default_asset_dir",
    "download_url",
    "fetch_assets",
    "missing_assets",
]

FETCH_COMMAND = "agentrl osworld fetch-assets"
DEFAULT_MAX_BYTES = 512 * 1024**2
"""The largest file ``fetch-assets`` keeps by default (OSWorld's largest assets are videos of tens of MB)."""
_INDEX_VERSION = 1


class MissingAsset(AgentRLError, LookupError):
    """A task needs a URL's file that is not in the asset store; the message names the URL and the fetch command."""


def default_asset_dir() -> Path:
    """``$AGENTRL_CACHE/osworld/assets``, else ``~/.cache/agentrl/osworld/assets``."""
    root = os.environ.get("AGENTRL_CACHE")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "agentrl"
    return base / "osworld" / "assets"


@dataclass(frozen=True)
class AssetEntry:
    """One cached URL: its file (``objects/<sha256>``, relative to the store), content hash and size."""

    url: str
    file: str
    sha256: str
    size: int


class AssetStore:
    """Files fetched from URLs, content-addressed, with an index ``url -> (file, sha256, size)``.

    Args:
        root: the store's folder (default :func:`default_asset_dir`); created on the first write.
        source: the task path ``fetch-assets`` should be run on, for the :class:`MissingAsset` message.
    """

    def __init__(self, root: str | Path | None = None, *, source: str | None = None) -> None:
        self.root = Path(root).expanduser() if root is not None else default_asset_dir()
        self.source = source
        self._cached: tuple[tuple[int, int], dict[str, AssetEntry]] | None = None

    def __repr__(self) -> str:
        return f"AssetStore({str(self.root)!r})"

    @property
    def index_path(self) -> Path:
        """``root/index.json``."""
        return self.root / "index.json"

    # ------------------------------------------------------------------ reading
    def entries(self) -> dict[str, AssetEntry]:
        """Every indexed URL (an absent or unreadable index is empty); re-read only when the file changed."""
        try:
            stat = self.index_path.stat()
        except OSError:
            return {}
        key = (stat.st_mtime_ns, stat.st_size)
        if self._cached is not None and self._cached[0] == key:
            return self._cached[1]
        entries = _parse_index(self.index_path)
        self._cached = (key, entries)
        return entries

    def lookup(self, url: str) -> Path | None:
        """The cached file of ``url``, or ``None`` when it is not indexed or its file is gone or truncated."""
        entry = self.entries().get(url)
        if entry is None:
            return None
        path = self.root / entry.file
        try:
            return path if path.stat().st_size == entry.size else None
        except OSError:
            return None

    def path(self, url: str) -> Path:
        """The cached file of ``url``.

        Raises:
            MissingAsset: it is not cached; the message names the URL, the store and the fetch command.
        """
        found = self.lookup(url)
        if found is None:
            raise MissingAsset(self.missing_message([url]))
        return found

    def read(self, url: str) -> bytes:
        """The bytes of ``url``'s cached file (raises :class:`MissingAsset` as :meth:`path`)."""
        return self.path(url).read_bytes()

    def missing_message(self, urls: Iterable[str]) -> str:
        """The error text for URLs that are not cached: which, where the store is, the command to run."""
        listed = list(dict.fromkeys(urls))
        target = shlex.quote(self.source) if self.source else "PATH"
        if len(listed) == 1:
            what = f"OSWorld asset {listed[0]}"
        else:
            what = f"{len(listed)} OSWorld assets ({', '.join(listed)})"
        verb = "is" if len(listed) == 1 else "are"
        return (f"{what} {verb} not in the asset cache {self.root}; episodes never download. Fetch the task files' "
                f"assets once, where the network is reachable: {FETCH_COMMAND} {target} (PATH: the task file, "
                "folder or evaluation_examples/test_all.json; set $AGENTRL_CACHE to use another cache)")

    # ------------------------------------------------------------------ writing
    def put(self, url: str, data: bytes) -> AssetEntry:
        """Store ``data`` as ``url``'s file (bytes already in memory; :func:`download_url` streams)."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".part-")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        return self.commit(url, Path(tmp), hashlib.sha256(data).hexdigest(), len(data))

    def commit(self, url: str, tmp: Path, sha256: str, size: int) -> AssetEntry:
        """Move the finished download ``tmp`` (in :attr:`root`) to ``objects/<sha256>`` and index it under ``url``."""
        objects = self.root / "objects"
        objects.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, objects / sha256)
        entry = AssetEntry(url, f"objects/{sha256}", sha256, size)
        with self._locked():
            entries = dict(_parse_index(self.index_path))
            entries[url] = entry
            _write_index(self.index_path, entries)
        self._cached = None
        return entry

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / "index.lock", "a+b") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _parse_index(path: Path) -> dict[str, AssetEntry]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    assets = data.get("assets") if isinstance(data, Mapping) else None
    out: dict[str, AssetEntry] = {}
    for url, raw in (assets or {}).items():
        if isinstance(raw, Mapping) and isinstance(raw.get("file"), str) and isinstance(raw.get("size"), int):
            out[url] = AssetEntry(url, raw["file"], str(raw.get("sha256", "")), raw["size"])
    return out


def _write_index(path: Path, entries: Mapping[str, AssetEntry]) -> None:
    body = {"version": _INDEX_VERSION,
            "assets": {url: {"file": e.file, "sha256": e.sha256, "size": e.size} for url, e in sorted(entries.items())}}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".index-")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(body, out, indent=1)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


# ---------------------------------------------------------------------- what tasks need


@dataclass(frozen=True)
class AssetRef:
    """One URL a task needs: where in the task (``config[0].files[1]``, ``evaluator.expected``) and how used."""

    url: str
    where: str
    kind: str
    """``"download"`` (a setup / postconfig step) or ``"cloud_file"`` (a getter)."""


def _urls(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def asset_refs(task: Any) -> list[AssetRef]:
    """Every URL ``task`` (an :class:`~agentrl.envs.osworld.tasks.format.OSWorldTask`) fetches, in file order.

    ``download`` steps in ``config`` and ``evaluator.postconfig``, ``cloud_file`` getters in
    ``evaluator.result`` / ``evaluator.expected`` (a list ``path`` with ``multi``: every URL). A
    value that is not a string is left out (OSWorld's own step would fail on it too).

    >>> from agentrl.envs.osworld.tasks.format import OSWorldTask
    >>> task = OSWorldTask.from_dict({"id": "t", "instruction": "x",
    ...     "config": [{"type": "download", "parameters": {"files": [{"url": "https://h/a", "path": "~/a"}]}}],
    ...     "evaluator": {"func": "compare_table", "result": {"type": "vm_file", "path": "~/a", "dest": "a"},
    ...                   "expected": {"type": "cloud_file", "path": "https://h/g", "dest": "g"}}})
    >>> [(r.url, r.where) for r in asset_refs(task)]
    [('https://h/a', 'config[0].files[0]'), ('https://h/g', 'evaluator.expected')]
    """
    refs: list[AssetRef] = []
    ev = task.evaluator
    steps = [(f"config[{i}]", s) for i, s in enumerate(task.config)]
    steps += [(f"evaluator.postconfig[{i}]", s) for i, s in enumerate(ev.postconfig)]
    for where, step in steps:
        if step.type != "download":
            continue
        files = step.parameters.get("files")
        for j, entry in enumerate(files if isinstance(files, list) else []):
            url = entry.get("url") if isinstance(entry, Mapping) else None
            if isinstance(url, str) and url:
                refs.append(AssetRef(url, f"{where}.files[{j}]", "download"))
    if not ev.infeasible:
        for name, specs in (("result", ev.results), ("expected", ev.expecteds)):
            for i, spec in enumerate(specs):
                if spec is None or spec.get("type") != "cloud_file":
                    continue
                where = f"evaluator.{name}[{i}]" if ev.multi else f"evaluator.{name}"
                for url in _urls(spec.get("path")):
                    if isinstance(url, str) and url:
                        refs.append(AssetRef(url, where, "cloud_file"))
    return refs


def missing_assets(task: Any, store: AssetStore) -> list[str]:
    """The URLs of ``task`` (see :func:`asset_refs`) that ``store`` does not hold, each once."""
    return list(dict.fromkeys(ref.url for ref in asset_refs(task) if store.lookup(ref.url) is None))


def cloud_file(spec: Mapping[str, Any], store: AssetStore, dest_dir: str | Path) -> str | list[str]:
    """OSWorld's ``cloud_file`` getter, served from ``store``: the local path(s) of the gold file(s).

    As OSWorld: without ``multi``, ``path`` is one URL and ``dest`` one file name; with ``multi``
    both are parallel lists. Each file is placed as ``dest_dir/<dest>`` (a copy of the cached one, so
    a metric that looks at the suffix or writes the file sees OSWorld's name and cannot touch the
    cache). ``gives`` (default ``[0]``) picks which are returned, in file order: one path as a
    string, several (or none) as a list.

    >>> import tempfile
    >>> store = AssetStore(tempfile.mkdtemp())
    >>> for name in ("a", "b", "c"):
    ...     _ = store.put(f"http://h/{name}", name.encode())
    >>> out = tempfile.mkdtemp()
    >>> Path(cloud_file({"path": "http://h/a", "dest": "a.txt"}, store, out)).name
    'a.txt'
    >>> spec = {"path": ["http://h/a", "http://h/b", "http://h/c"], "dest": ["a", "b", "c"], "multi": True,
    ...         "gives": [2, 0]}
    >>> [Path(p).read_text() for p in cloud_file(spec, store, out)]
    ['a', 'c']

    Raises:
        MissingAsset: a URL is not cached.
        ValueError: the spec is malformed (lists that do not pair up, a ``dest`` that is not a file name).
    """
    if spec.get("multi", False):
        paths, dests = spec.get("path"), spec.get("dest")
        if not isinstance(paths, list) or not isinstance(dests, list) or len(paths) != len(dests):
            raise ValueError("cloud_file with multi needs 'path' and 'dest' lists of the same length")
    else:
        paths, dests = [spec.get("path")], [spec.get("dest")]
    gives = set(spec.get("gives", [0]))
    dest_root = Path(dest_dir)
    dest_root.mkdir(parents=True, exist_ok=True)
    given: list[str] = []
    for i, (url, dest) in enumerate(zip(paths, dests, strict=True)):
        if not isinstance(url, str) or not url:
            raise ValueError(f"cloud_file path[{i}] must be a URL string, got {url!r}")
        name = Path(str(dest or "")).name
        if not name or name in (".", ".."):
            raise ValueError(f"cloud_file dest[{i}] must be a file name, got {dest!r}")
        local = dest_root / name
        shutil.copyfile(store.path(url), local)
        if i in gives:
            given.append(str(local))
    return given[0] if len(given) == 1 else given


# ---------------------------------------------------------------------- fetching


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        if urllib.parse.urlsplit(newurl).scheme not in ("http", "https"):
            raise urllib.error.HTTPError(newurl, code, f"redirect to a non-http(s) URL {newurl!r}", headers, fp)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_OPENER = urllib.request.build_opener(_HttpOnlyRedirects)


def download_url(url: str, store: AssetStore, *, max_bytes: int = DEFAULT_MAX_BYTES, timeout_s: float = 60.0,
                 retries: int = 3, backoff_s: float = 1.0) -> AssetEntry:
    """Fetch ``url`` (http/https only) into ``store``, streaming, at most ``max_bytes``; ``retries`` tries in all.

    Raises:
        ValueError: not an http(s) URL, or the body is larger than ``max_bytes`` (neither is retried).
        OSError: every try failed (the last error's text; ``urllib.error.HTTPError`` for an HTTP status).
    """
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        raise ValueError(f"not an http(s) URL: {url!r}")
    store.root.mkdir(parents=True, exist_ok=True)
    last: OSError | None = None
    for attempt in range(max(1, retries)):
        if attempt:
            time.sleep(backoff_s * attempt)
        fd, tmp_name = tempfile.mkstemp(dir=store.root, prefix=".part-")
        tmp = Path(tmp_name)
        try:
            digest, size = hashlib.sha256(), 0
            request = urllib.request.Request(url, headers={"User-Agent": "agentrl-osworld-assets"})
            with os.fdopen(fd, "wb") as out, _OPENER.open(request, timeout=timeout_s) as resp:
                while chunk := resp.read(1 << 16):
                    size += len(chunk)
                    if size > max_bytes:
                        raise ValueError(f"{url} is larger than the cap of {max_bytes} bytes (--max-mb)")
                    digest.update(chunk)
                    out.write(chunk)
            return store.commit(url, tmp, digest.hexdigest(), size)
        except urllib.error.HTTPError as exc:
            last = exc
            if 400 <= exc.code < 500 and exc.code not in (408, 429):
                break  # the URL is wrong or gone: trying again will not help
        except OSError as exc:  # URLError, timeouts, resets
            last = exc
        finally:
            tmp.unlink(missing_ok=True)
    assert last is not None
    raise last


@dataclass
class FetchReport:
    """What :func:`fetch_assets` did: URLs ``fetched``, ``cached`` (already there) and ``failed`` (url -> reason)."""

    fetched: list[str]
    cached: list[str]
    failed: dict[str, str]
    bytes_fetched: int = 0

    def summary(self) -> str:
        """One line of counts."""
        return (f"{len(self.fetched)} fetched ({self.bytes_fetched / 1e6:.1f} MB), {len(self.cached)} already cached, "
                f"{len(self.failed)} failed")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return f"cannot connect: {exc.reason}"
    return f"{type(exc).__name__}: {exc}" if not isinstance(exc, ValueError) else str(exc)


def fetch_assets(urls: Iterable[str], store: AssetStore, *, max_bytes: int = DEFAULT_MAX_BYTES,
                 timeout_s: float = 60.0, retries: int = 3, backoff_s: float = 1.0,
                 progress: Callable[[str], None] | None = None) -> FetchReport:
    """Download every URL of ``urls`` that ``store`` lacks; a failure is recorded and the others go on.

    ``progress`` gets one line per URL (``[i/n] fetched URL (12.3 kB)`` or ``... failed: reason``).
    """
    todo = list(dict.fromkeys(urls))
    report = FetchReport([], [], {})
    for i, url in enumerate(todo, 1):
        if store.lookup(url) is not None:
            report.cached.append(url)
            continue
        try:
            entry = download_url(url, store, max_bytes=max_bytes, timeout_s=timeout_s, retries=retries,
                                 backoff_s=backoff_s)
        except (OSError, ValueError) as exc:
            report.failed[url] = _reason(exc)
            if progress is not None:
                progress(f"[{i}/{len(todo)}] failed {url}: {report.failed[url]}")
            continue
        report.fetched.append(url)
        report.bytes_fetched += entry.size
        if progress is not None:
            progress(f"[{i}/{len(todo)}] fetched {url} ({entry.size / 1e3:.1f} kB)")
    return report
