"""Running a process: handing the shell its command, keeping a bounded record of its output."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import selectors
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Protocol, TypeVar

from sprout.sandbox.errors import BadArgument
from sprout.sandbox.types import Observation

DRAIN_AFTER_EXIT_S = 0.5
"""How long to keep reading once the command is gone (its pipe may close a moment later)."""

MFD_NOEXEC_SEAL = 0x0008
"""memfd_create's flag for a file that can never be made executable (Linux 6.3; Python 3.11
has no name for it). Older kernels refuse it with EINVAL, and then the file is made without."""

_memfd_flags: int | None = None


def encode_command(command: str, limit: int) -> bytes:
    """The UTF-8 bytes the shell will read, or BadArgument("command") saying what is wrong.

    `limit` is `Limits.command_bytes` (0: none). Offsets count characters of `command`.
    """
    try:
        text = command.encode("utf-8")
    except UnicodeEncodeError as error:
        raise BadArgument(
            "command",
            f"is not valid UTF-8: {command[error.start]!r} (a lone surrogate) at offset "
            f"{error.start}",
        ) from None
    nul = command.find("\0")
    if nul >= 0:
        raise BadArgument("command", f"contains a NUL byte at offset {nul}")
    if limit and len(text) > limit:
        raise BadArgument(
            "command",
            f"is {len(text):,} bytes, over the limit of {limit:,} bytes (limits.command_bytes); "
            "write big data in several calls",
        )
    return text


@contextlib.contextmanager
def command_script(text: bytes) -> Iterator[int]:
    """A read-only file descriptor holding `text`, for the shell to run as its script.

    The command never goes on a command line, where Linux caps one argument at
    128 KiB, and never on a filesystem the sandbox writes (a checkpoint holds no
    trace of it). It is a sealed memfd: no write, truncate or growth can change
    it, through this descriptor or by reopening /proc/self/fd/N for writing, so
    a command cannot rewrite what its own shell has yet to read. The descriptor
    is close-on-exec here; pass it to the child with `pass_fds`. Without
    memfd_create (not Linux) it is an unlinked temporary file, which the copy
    backend's commands, running as this user, could write anyway.
    """
    fd = _sealed_memfd(text) if hasattr(os, "memfd_create") else _unlinked_file(text)
    if fd <= 2:  # this process runs with stdio closed: keep clear of the child's 0, 1 and 2
        low, fd = fd, fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
        os.close(low)
    try:
        yield fd
    finally:
        os.close(fd)


def script_path(fd: int) -> str:
    """The path under which a process reads its inherited descriptor `fd`."""
    return f"/proc/self/fd/{fd}" if sys.platform == "linux" else f"/dev/fd/{fd}"


def _sealed_memfd(text: bytes) -> int:
    global _memfd_flags
    if _memfd_flags is None:
        _memfd_flags = os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL
    try:
        writable = os.memfd_create("sprout-command", _memfd_flags)
    except OSError as error:
        if error.errno != errno.EINVAL or not _memfd_flags & MFD_NOEXEC_SEAL:
            raise
        _memfd_flags &= ~MFD_NOEXEC_SEAL
        writable = os.memfd_create("sprout-command", _memfd_flags)
    try:
        _write_all(writable, text)
        seals = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
        fcntl.fcntl(writable, fcntl.F_ADD_SEALS, seals)
        # A fresh read-only description: the child gets no write access to hand on.
        return os.open(f"/proc/self/fd/{writable}", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(writable)


def _unlinked_file(text: bytes) -> int:
    fd, path = tempfile.mkstemp(prefix="sprout-command-")  # close-on-exec already
    os.unlink(path)
    _write_all(fd, text)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _write_all(fd: int, text: bytes) -> None:
    view = memoryview(text)
    while view:
        view = view[os.write(fd, view) :]


@dataclass
class CappedOutput:
    """Head and tail of a stream, with the middle cut once it exceeds `cap` bytes.

    An agent needs the first lines (the command's own messages) and the last
    (the error at the end); the middle of a 40 MB build log helps no one.
    """

    cap: int
    total: int = 0

    def __post_init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap // 2 - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            excess = len(self.tail) - (self.cap - self.cap // 2)
            if excess > 0:
                del self.tail[:excess]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if not self.truncated:
            return head + tail
        cut = self.total - len(self.head) - len(self.tail)
        return f"{head}\n[... {cut} bytes of output cut ...]\n{tail}"


class Child(Protocol):
    """A started process as `capture` reads it: `subprocess.Popen`, or a call the sandbox's
    launcher started (jail/launcher.py)."""

    @property
    def stdout(self) -> IO[bytes] | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def kill(self) -> None: ...


C = TypeVar("C", bound=Child)


def run_captured(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout: float,
    output_cap: int,
    kill: Callable[[subprocess.Popen[bytes]], None],
    cwd: str | None = None,
    new_session: bool = False,
    pass_fds: Sequence[int] = (),
) -> Observation:
    """Run `argv` with stdout and stderr on one pipe, killing it with `kill` at `timeout`.

    stdin is /dev/null; `pass_fds` stay open in the child (a command's script).
    The child leads its own process group (or session, with `new_session`), so
    a Ctrl-C at the terminal reaches sprout alone, which lets the call finish.
    """
    start = time.monotonic()
    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=dict(env),
        cwd=cwd,
        start_new_session=new_session,
        process_group=None if new_session else 0,
        pass_fds=tuple(pass_fds),
    )
    return capture(process, start=start, timeout=timeout, output_cap=output_cap, kill=kill)


def capture(
    process: C, *, start: float, timeout: float, output_cap: int, kill: Callable[[C], None]
) -> Observation:
    """The observation of `process` (started at monotonic time `start`), whose stdout pipe
    carries its output, killed with `kill` at `timeout`.

    Reading stops at end of file or shortly after the process exits, so a
    background child that keeps the pipe open cannot hang the caller.
    """
    assert process.stdout is not None
    output = CappedOutput(output_cap)
    deadline = start + timeout
    timed_out = _read_until_exit(process, output, deadline, kill)
    if not timed_out:
        # The pipe can close before the command exits (it closed its output).
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            timed_out = True
    kill(process)  # whatever the command left behind goes too
    process.stdout.close()
    returncode = process.wait()
    return Observation(
        output=output.text(),
        exit_code=None if timed_out else _exit_code(returncode),
        timed_out=timed_out,
        duration_s=time.monotonic() - start,
        truncated=output.truncated,
        output_bytes=output.total,
    )


def _read_until_exit(
    process: C, output: CappedOutput, deadline: float, kill: Callable[[C], None]
) -> bool:
    """Feed `process`'s output pipe to `output` until end of file, or until a short drain
    once the process has exited or been killed at `deadline`; whether it timed out.

    The drain is bounded because a background child may hold the pipe open forever: the
    caller must not hang on it."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    os.set_blocking(fd, False)
    timed_out = False
    stop_reading_at: float | None = None
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if stop_reading_at is None:
                if process.poll() is not None:
                    kill(process)
                    stop_reading_at = now + DRAIN_AFTER_EXIT_S
                elif now >= deadline:
                    timed_out = True
                    kill(process)
                    stop_reading_at = now + DRAIN_AFTER_EXIT_S
            wait_until = stop_reading_at if stop_reading_at is not None else deadline
            if now >= wait_until and stop_reading_at is not None:
                return timed_out
            if not selector.select(min(max(wait_until - now, 0.0), 0.05)):
                continue
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                return timed_out
            output.feed(chunk)


def _exit_code(returncode: int) -> int:
    """Shell convention: a command ended by signal N exits 128+N."""
    return 128 - returncode if returncode < 0 else returncode
