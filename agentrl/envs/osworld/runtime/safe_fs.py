"""The host's file work in folders a desktop's sandbox can write: never through a link planted there.

The desktop's sandbox writes its HOME, its runtime folder (the session bus's socket, ``XDG_RUNTIME_DIR``) and
its private package database (``/var/lib/dpkg`` and apt's folders, :mod:`~agentrl.envs.osworld.runtime.vm_state`).
Between episodes the host (the server's user, root on many machines) empties and refills those folders. Had it
done so by path, a process of the sandbox could have left ``status -> /etc/<anything>`` behind for the host to
write through. Everything here works relative to a folder opened with ``O_DIRECTORY | O_NOFOLLOW`` and follows
no link, whatever the sandbox left there:

* :func:`open_dir` opens a folder (a path the host owns, or one name in an open folder), refusing a link;
* :func:`empty_dir` removes everything in an open folder: links are removed, never followed; folders of any
  depth (deep ones are first moved up), of any permissions;
* :func:`write_file` and :func:`copy_file` write a new file under a random name (``O_CREAT | O_EXCL |
  O_NOFOLLOW``) and rename it over the name: whatever was there (a link, a FIFO) is replaced, never opened;
* :func:`copy_tree` copies a host folder (a trusted template) into an open folder the same way, its links
  as links; :func:`ensure_dir` makes a real sub-folder, replacing a link or a file of that name;
* :func:`list_names` lists a chain of real sub-folders; :func:`tree_stamp` says whether anything in a tree
  changed (inode change times, which no process can set back), reading metadata only.

Nothing here opens an existing file of such a folder for reading or writing.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as outside, tempfile.TemporaryDirectory() as sandbox:
...     os.symlink(outside + "/victim", sandbox + "/status")  # left by the sandbox
...     fd = open_dir(sandbox)
...     write_file(fd, "status", b"host data")
...     os.close(fd)
...     (os.path.exists(outside + "/victim"), os.path.islink(sandbox + "/status"))
(False, False)
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
from pathlib import Path

__all__ = [
    "copy_file",
    "copy_tree",
    "empty_dir",
    "ensure_dir",
    "list_names",
    "open_dir",
    "remove_entry",
    "tree_stamp",
    "write_file",
]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_DEPTH = 48
"""Deeper folders are moved up to the top folder before they are emptied: no recursion or descriptor limit."""
MAX_PASSES = 100_000


def _name(name: str) -> str:
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"expected one name in a folder, got {name!r}")
    return name


def _fresh() -> str:
    return f".agentrl-{secrets.token_hex(8)}"


def open_dir(path: str | os.PathLike[str], *, dir_fd: int | None = None) -> int:
    """A descriptor of folder ``path``, opened without following a link (``O_DIRECTORY | O_NOFOLLOW``).

    With ``dir_fd``, ``path`` is one name in that open folder; without, a path whose folders the host owns
    (only its last part may be the sandbox's). Raises ``OSError`` (``ELOOP``, ``ENOTDIR``) for a link or a file.
    """
    if dir_fd is not None:
        return os.open(_name(os.fspath(path)), _DIR_FLAGS, dir_fd=dir_fd)
    return os.open(os.fspath(path), _DIR_FLAGS)


def _open_sub(fd: int, name: str) -> int | None:
    """Folder ``name`` in ``fd``, made searchable and writable by its owner when it was not; ``None`` if gone."""
    try:
        sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
    except PermissionError:  # chmod 000 by the sandbox (the host is not root): chmod the folder itself, not a link
        try:
            handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        except OSError:
            return None
        try:
            os.chmod(f"/proc/self/fd/{handle}", 0o700)
        except OSError:
            return None
        finally:
            os.close(handle)
        try:
            sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except OSError:
            return None
    except OSError:
        return None
    with contextlib.suppress(OSError):
        if os.fstat(sub).st_mode & 0o700 != 0o700:
            os.fchmod(sub, 0o700)
    return sub


def _empty(top: int, fd: int, depth: int) -> bool:
    """Empty ``fd``; a folder past :data:`MAX_DEPTH` is moved up into ``top``. Whether anything was moved."""
    moved = False
    try:
        names = os.listdir(fd)
    except OSError:
        return False
    for name in names:
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode):
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=fd)
            continue
        if depth >= MAX_DEPTH:
            with contextlib.suppress(OSError):
                os.rename(name, _fresh(), src_dir_fd=fd, dst_dir_fd=top)
                moved = True
            continue
        sub = _open_sub(fd, name)
        if sub is None:
            continue
        try:
            moved = _empty(top, sub, depth + 1) or moved
        finally:
            os.close(sub)
        with contextlib.suppress(OSError):
            os.rmdir(name, dir_fd=fd)
    return moved


def empty_dir(fd: int) -> None:
    """Remove everything in the open folder ``fd`` (not the folder itself), following no link.

    Errors (a file that vanished, a read-only mount) are skipped: what could not be removed stays.
    """
    with contextlib.suppress(OSError):
        if os.fstat(fd).st_mode & 0o700 != 0o700:
            os.fchmod(fd, os.fstat(fd).st_mode | 0o700)
    for _ in range(MAX_PASSES):
        if not _empty(fd, fd, 0):
            return


def remove_entry(dir_fd: int, name: str) -> None:
    """Remove ``name`` from the open folder ``dir_fd``: a file or link is unlinked, a folder emptied and removed."""
    name = _name(name)
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=dir_fd)
        return
    sub = _open_sub(dir_fd, name)
    if sub is not None:
        try:
            empty_dir(sub)
        finally:
            os.close(sub)
    os.rmdir(name, dir_fd=dir_fd)


def ensure_dir(dir_fd: int, name: str, mode: int = 0o755) -> int:
    """A descriptor of the real folder ``name`` in ``dir_fd`` (made when missing; a link or file there is replaced).

    The folder gets ``mode``. The caller closes the descriptor.
    """
    name = _name(name)
    for _ in range(3):
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, mode, dir_fd=dir_fd)
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EACCES):
                raise
            remove_entry(dir_fd, name)
            continue
        try:
            os.fchmod(fd, mode)
        except OSError:
            os.close(fd)
            raise
        return fd
    raise OSError(errno.EEXIST, f"cannot make the folder {name!r}: something keeps taking its place")


def _replace(dir_fd: int, tmp: str, name: str) -> None:
    try:
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError as exc:  # a folder of that name: a file cannot replace it
        if exc.errno not in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
        remove_entry(dir_fd, name)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def _new_file(dir_fd: int, mode: int) -> tuple[str, int]:
    tmp = _fresh()
    fd = os.open(tmp, _NEW_FILE_FLAGS, 0o600, dir_fd=dir_fd)
    try:
        os.fchmod(fd, mode)
    except OSError:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    return tmp, fd


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_file(dir_fd: int, name: str, data: bytes, mode: int = 0o644) -> None:
    """Make ``name`` in the open folder ``dir_fd`` a new file holding ``data`` (whatever was there is replaced)."""
    name = _name(name)
    tmp, fd = _new_file(dir_fd, mode)
    try:
        _write_all(fd, data)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
    os.close(fd)
    _replace(dir_fd, tmp, name)


def copy_file(src: str | os.PathLike[str], dir_fd: int, name: str) -> None:
    """Copy the host file ``src`` (mode and times too) to a new file ``name`` in the open folder ``dir_fd``."""
    name = _name(name)
    with open(src, "rb") as source:
        info = os.fstat(source.fileno())
        tmp, fd = _new_file(dir_fd, stat.S_IMODE(info.st_mode))
        try:
            while chunk := source.read(1 << 20):
                _write_all(fd, chunk)
            os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
    os.close(fd)
    _replace(dir_fd, tmp, name)


def _copy_link(target: str, dir_fd: int, name: str) -> None:
    tmp = _fresh()
    os.symlink(target, tmp, dir_fd=dir_fd)
    _replace(dir_fd, tmp, name)


def copy_tree(src: str | os.PathLike[str], dir_fd: int, name: str | None = None) -> None:
    """Copy the host folder ``src`` (trusted: a template the host owns) into the open folder ``dir_fd``.

    With ``name``, into the sub-folder of that name (made, or a link or file there replaced); without, into
    ``dir_fd`` itself, which then gets ``src``'s mode. Links in ``src`` are copied as links.
    """
    src = Path(src)
    mode = stat.S_IMODE(os.stat(src).st_mode)
    target = ensure_dir(dir_fd, name, mode) if name is not None else os.dup(dir_fd)
    try:
        if name is None:
            os.fchmod(target, mode)
        with os.scandir(src) as entries:
            for entry in entries:
                if entry.is_symlink():
                    _copy_link(os.readlink(entry.path), target, entry.name)
                elif entry.is_dir():
                    copy_tree(entry.path, target, entry.name)
                else:
                    copy_file(entry.path, target, entry.name)
    finally:
        os.close(target)


def list_names(dir_fd: int, *parts: str) -> list[str] | None:
    """The names in the chain of real sub-folders ``parts`` of ``dir_fd``; ``None`` when one is missing or a link."""
    fd = os.dup(dir_fd)
    try:
        for part in parts:
            try:
                sub = os.open(_name(part), _DIR_FLAGS, dir_fd=fd)
            except OSError:
                return None
            os.close(fd)
            fd = sub
        return os.listdir(fd)
    except OSError:
        return None
    finally:
        os.close(fd)


def tree_stamp(fd: int, max_entries: int = 1_000_000) -> str:
    """A digest of everything in the open folder ``fd`` that can change: the folders' and files' inode change times.

    Links are not looked at: a link's text cannot change, and adding, removing or replacing one changes its
    folder's change time. The change time (``st_ctime``) is set by the kernel on every write, rename, chmod
    and ``utime``, and no process can set it back, so equal digests mean nothing inside was touched. A tree
    deeper than :data:`MAX_DEPTH` or larger than ``max_entries`` gives a digest that matches nothing.
    """
    digest = hashlib.blake2b(digest_size=16)
    count = 0

    def visit(folder: int, path: str, depth: int) -> bool:
        nonlocal count
        info = os.fstat(folder)
        digest.update(f"{path}\0{info.st_ino}\0{info.st_ctime_ns}\0{info.st_mode}\n".encode())
        items = []
        with os.scandir(folder) as entries:  # an untouched folder lists in the same order each time
            for entry in entries:
                count += 1
                if count > max_entries:
                    return False
                if not entry.is_symlink():
                    items.append((entry.name, entry.is_dir(follow_symlinks=False)))
        for name, is_dir in items:
            if is_dir:
                if depth >= MAX_DEPTH:
                    return False
                try:
                    sub = os.open(name, _DIR_FLAGS, dir_fd=folder)
                except OSError:
                    return False
                try:
                    if not visit(sub, f"{path}/{name}", depth + 1):
                        return False
                finally:
                    os.close(sub)
                continue
            try:
                entry_info = os.stat(name, dir_fd=folder, follow_symlinks=False)
            except OSError:
                return False
            digest.update(f"{path}/{name}\0{entry_info.st_ino}\0{entry_info.st_ctime_ns}\n".encode())
        return True

    try:
        complete = visit(fd, "", 0)
    except OSError:
        complete = False
    return digest.hexdigest() if complete else "changed-" + secrets.token_hex(8)
