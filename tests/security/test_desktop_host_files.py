"""The host's file work in the folders a desktop's sandbox writes (``runtime/safe_fs.py``), attacked directly.

What a process of the sandbox could leave in HOME, the bus folder or the package database for the host to trip on:
links to host files and folders, FIFOs (an ``open`` would block the server), folders of any depth, folders with no
permissions, a folder where a file is expected. The host must remove or replace each, never follow, open or write
through it. (The desktop-level attacks are in ``test_desktop_escape.py``; on 036fe13 there was no such module: the
host emptied and wrote those folders by path, following links, as those tests show.)
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentrl.envs.osworld.runtime import safe_fs

SECRET = b"host-only content\n"


@pytest.fixture
def host(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A host folder with a file in it, outside the sandbox's folder; both must stay as they are."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(SECRET)
    before = _snapshot(outside)
    yield outside, outside / "secret"
    assert _snapshot(outside) == before, "the host changed a host folder through a link"


def _snapshot(folder: Path) -> list[tuple[str, int, bytes]]:
    return sorted(
        (str(p.relative_to(folder)), p.lstat().st_mode, p.read_bytes() if p.is_file() else b"")
        for p in folder.rglob("*")
    )


def _sandbox(tmp_path: Path) -> tuple[Path, int]:
    folder = tmp_path / "sandbox"
    folder.mkdir()
    return folder, safe_fs.open_dir(folder)


def test_emptying_removes_links_fifos_and_deep_trees_without_following(tmp_path: Path, host: tuple[Path, Path]) -> None:
    outside, secret = host
    folder, fd = _sandbox(tmp_path)
    try:
        (folder / "to-dir").symlink_to(outside)
        (folder / "to-file").symlink_to(secret)
        (folder / "sub").mkdir()
        (folder / "sub" / "to-dir").symlink_to(outside)
        os.mkfifo(folder / "fifo")
        deep = folder / "deep"
        deep.mkdir()
        cwd = os.getcwd()
        os.chdir(deep)
        try:
            for _ in range(600):  # deeper than any recursion or descriptor budget would allow naively
                os.mkdir("d")
                os.chdir("d")
            os.symlink(str(outside), "bottom-link")
        finally:
            os.chdir(cwd)
        (folder / "locked").mkdir()
        (folder / "locked" / "inside").write_text("x")
        (folder / "locked").chmod(0)
        safe_fs.empty_dir(fd)
        assert os.listdir(folder) == []
    finally:
        os.close(fd)


def test_writes_replace_what_is_there_and_never_open_it(tmp_path: Path, host: tuple[Path, Path]) -> None:
    outside, secret = host
    folder, fd = _sandbox(tmp_path)
    try:
        (folder / "status").symlink_to(secret)
        safe_fs.write_file(fd, "status", b"new status")
        assert not (folder / "status").is_symlink() and (folder / "status").read_bytes() == b"new status"
        os.mkfifo(folder / "available")  # opening it to write would block until a reader came
        done = threading.Event()

        def write() -> None:
            safe_fs.copy_file(secret, fd, "available")
            done.set()

        threading.Thread(target=write, daemon=True).start()
        assert done.wait(10), "the host opened a FIFO the sandbox left"
        assert stat.S_ISREG((folder / "available").lstat().st_mode)
        (folder / "diversions").mkdir()
        (folder / "diversions" / "x").symlink_to(outside)
        safe_fs.write_file(fd, "diversions", b"d")
        assert (folder / "diversions").read_bytes() == b"d"
        assert [p.name for p in folder.iterdir() if p.name.startswith(".agentrl-")] == []
    finally:
        os.close(fd)


def test_copying_a_template_into_planted_links(tmp_path: Path, host: tuple[Path, Path]) -> None:
    outside, _ = host
    template = tmp_path / "template"
    (template / "Documents" / "deeper").mkdir(parents=True)
    (template / "Documents" / "note.txt").write_text("note")
    (template / "Documents" / "deeper" / "a.txt").write_text("a")
    (template / "link").symlink_to("Documents/note.txt")
    folder, fd = _sandbox(tmp_path)
    try:
        (folder / "Documents").symlink_to(outside)
        (folder / "link").symlink_to(outside / "secret")
        safe_fs.copy_tree(template, fd)
        assert not (folder / "Documents").is_symlink()
        assert (folder / "Documents" / "deeper" / "a.txt").read_text() == "a"
        assert os.readlink(folder / "link") == "Documents/note.txt"
        (folder / "Desktop").symlink_to(outside)
        os.close(safe_fs.ensure_dir(fd, "Desktop"))
        assert (folder / "Desktop").is_dir() and not (folder / "Desktop").is_symlink()
        (folder / "xdg").symlink_to(outside)
        assert safe_fs.list_names(fd, "xdg") is None  # a listing through a link is refused
        with pytest.raises(OSError):
            safe_fs.open_dir("xdg", dir_fd=fd)
    finally:
        os.close(fd)


def test_the_change_stamp_sees_every_change_and_follows_nothing(tmp_path: Path, host: tuple[Path, Path]) -> None:
    outside, secret = host
    folder, fd = _sandbox(tmp_path)
    try:
        (folder / "a" / "b").mkdir(parents=True)
        (folder / "a" / "b" / "file").write_text("one")
        (folder / "to-outside").symlink_to(outside)
        first = safe_fs.tree_stamp(fd)
        assert safe_fs.tree_stamp(fd) == first
        secret.touch()  # a change outside, seen only through the link: not the tree's
        assert safe_fs.tree_stamp(fd) == first
        info = (folder / "a" / "b" / "file").stat()
        time.sleep(0.02)
        (folder / "a" / "b" / "file").write_text("two")  # in place, deep down
        os.utime(folder / "a" / "b" / "file", ns=(info.st_atime_ns, info.st_mtime_ns))  # and the time put back
        assert safe_fs.tree_stamp(fd) != first
        secret.write_bytes(SECRET)
    finally:
        os.close(fd)
