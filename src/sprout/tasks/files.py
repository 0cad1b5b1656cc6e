"""Reading a task's own files, so that a bad one is one line and the other tasks go on.

A file that is not there is not there (the loaders decide whether it had to
be); anything else that is not a readable UTF-8 file — a folder, a named pipe,
a link to nowhere, a file sprout may not read, bytes that are not UTF-8 — is a
TaskError naming the task, the file and what is wrong with it. A pipe is never
opened: reading one would wait forever.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sprout.config import Settings, parse_toml, validate_table
from sprout.task import TaskError

KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _prefix(path: Path, task_id: str | None) -> str:
    return f"{task_id}: {path}" if task_id else str(path)


def kind(mode: int) -> str:
    """What a file of `mode` is, in words ("a folder", "a named pipe"); "a file" when regular."""
    return next((words for test, words in KINDS if test(mode)), "a file")


def _why_not(path: Path) -> str | None:
    """Why nothing can be read at `path` though something is there; None when nothing is
    there at all (or a folder on the way is a file)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if not os.path.islink(path):
            return None
        return f"a link to {os.readlink(path)}, which does not exist"
    except NotADirectoryError:
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "a link that leads back to itself"
        return f"cannot be read ({error.strerror})"
    if stat.S_ISREG(mode):
        return None
    return f"{kind(mode)}, not a file"


def has_file(path: Path, task_id: str | None) -> bool:
    """True when `path` is a file to read, False when nothing is there; TaskError when
    something else is (a folder, a pipe, a link to nowhere)."""
    why = _why_not(path)
    if why is not None:
        raise TaskError(f"{_prefix(path, task_id)}: {why}")
    return path.is_file()


def read_text(path: Path, task_id: str | None) -> str:
    """The text of file `path` (UTF-8); TaskError when it is missing, is no file, cannot
    be read or is not UTF-8 (with the line and column of the first bad byte)."""
    if not has_file(path, task_id):
        raise TaskError(f"{_prefix(path, task_id)}: missing")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise TaskError(f"{_prefix(path, task_id)}: cannot be read ({error.strerror})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise TaskError(f"{_prefix(path, task_id)}: {not_utf8(data, error)}") from None


def optional_text(path: Path, task_id: str | None) -> str | None:
    """As `read_text`, but None when nothing is at `path`."""
    return read_text(path, task_id) if has_file(path, task_id) else None


@contextmanager
def naming_task(task_id: str | None) -> Iterator[None]:
    """The settings readers' ValueErrors (`sprout.config`: `FILE: TABLE.FIELD: PROBLEM`) as
    TaskErrors that start with the task's id, as every loader error does."""
    try:
        yield
    except TaskError:
        raise
    except ValueError as error:
        raise TaskError(f"{task_id}: {error}" if task_id else str(error)) from None


def read_toml(path: Path, task_id: str | None) -> dict[str, Any] | None:
    """A task's TOML file `path`, parsed; None when it is absent."""
    text = optional_text(path, task_id)
    if text is None:
        return None
    with naming_task(task_id):
        return parse_toml(text, path)


def task_table(
    data: Mapping[str, object], table: str, model: type[Settings], path: Path, task_id: str | None
) -> Settings:
    """The `[table]` of a task's TOML `data` (read from `path`) as `model`, its defaults
    when absent; the TaskError names the task, the file and the field."""
    with naming_task(task_id):
        return validate_table(data.get(table, {}), model, path=path, table=table)


def not_utf8(data: bytes, error: UnicodeDecodeError) -> str:
    """ "not UTF-8 (line 3, column 7: byte 0xff)": where the first bad byte is (no line
    when `data` is one line)."""
    line = data.count(b"\n", 0, error.start) + 1
    column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
    at = f"line {line}, column {column}" if b"\n" in data.rstrip(b"\n") else f"column {column}"
    return f"not UTF-8 ({at}: byte 0x{data[error.start]:02x})"


def subfolder(path: Path, task_id: str | None, why: str) -> Path | None:
    """`path` when it is a folder, None when nothing is there; TaskError when it is
    something else. `why` says what the folder holds, for the error."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        if os.path.islink(path):
            raise TaskError(
                f"{_prefix(path, task_id)}: a link to {os.readlink(path)}, which does not exist"
            ) from None
        return None
    except OSError as error:
        raise TaskError(f"{_prefix(path, task_id)}: cannot be read ({error.strerror})") from None
    if not stat.S_ISDIR(mode):
        raise TaskError(f"{_prefix(path, task_id)}: {kind(mode)}, not a folder ({why})")
    return path


def only_plain_files(top: Path, task_id: str | None) -> None:
    """TaskError naming the first thing under folder `top` that is neither a file, a folder
    nor a link (a pipe, a socket, a device): sprout copies such folders into sandboxes."""

    def unreadable(error: OSError) -> None:
        raise TaskError(
            f"{_prefix(Path(error.filename), task_id)}: cannot be read ({error.strerror})"
        )

    for directory, dirnames, filenames in os.walk(top, onerror=unreadable):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(directory, name)
            mode = os.lstat(path).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                raise TaskError(
                    f"{_prefix(path, task_id)}: {kind(mode)}; sprout copies only files, "
                    "folders and links"
                )


def os_problem(error: OSError) -> str:
    """An OSError as one line: shutil's copies collect theirs, (source, target, why) each."""
    if isinstance(error, shutil.Error) and error.args and isinstance(error.args[0], list):
        source, _, why = error.args[0][0]
        return f"cannot copy {source}: {why}"
    if error.filename is not None:
        return f"{error.filename}: {error.strerror or error}"
    return str(error)
