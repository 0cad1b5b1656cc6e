"""A sandbox's launcher: one process, inside the sandbox's cgroups, that starts its calls.

Every call's helper used to be started by sprout and to join the sandbox's cgroups on its
own, and on cgroup v1 a join waits for an RCU grace period of the kernel's whenever no
other join came just before: 10-15 ms on about one call in ten here, most of the tail of a
call's latency. The launcher (`sprout-box --launcher`, box.c) joins them once, at the
sandbox's first call or ahead of it as a spare (backends/spares.py), and runs each call in
a child of its own (a fork, no exec: the launcher is the helper), so the call is born
inside them and joins nothing; the call checks that it is inside (`--in-cgroup`) before it
runs the command. The launcher also keeps the sandbox's mounted root between calls
(`forget_root`). It lives as long as its socket: when sprout closes the sandbox, or dies,
it ends, and every call still running with it. Nothing inside a sandbox can see or signal
it (it is outside every call's PID namespace), but the OOM killer of the sandbox's memory
cgroup can pick it as any process inside: the call in flight then ends as killed, and the
sandbox starts another launcher at its next call.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import BinaryIO

from sprout.sandbox.errors import SandboxSetupFailed
from sprout.sandbox.jail.idmap import IdRange

START_TIMEOUT_S = 10.0
"""How long the launcher may take to join the cgroups and say it is ready."""
EXIT_TIMEOUT_S = 5.0
"""How long closing waits for the launcher to go (its cgroups can be removed only then)."""


def _readable(sock: socket.socket, timeout: float | None) -> bool:
    """Whether `sock` can be read within `timeout` seconds (None: no limit). poll(2), not
    select(2): a process with hundreds of sandboxes open holds descriptors past 1024."""
    waiting = select.poll()
    waiting.register(sock, select.POLLIN)
    return bool(waiting.poll(None if timeout is None else max(timeout, 0.0) * 1000))


class LaunchedCall:
    """One call, started by the launcher: what `subprocess.Popen` offers the
    caller (`stdout`, `poll`, `wait`, `kill`, `returncode`), over the call's own socket."""

    def __init__(self, status: socket.socket, stdout: BinaryIO | None) -> None:
        self._status = status
        self._said = b""
        self.stdout: BinaryIO | None = stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The call's return code (negative: the signal that ended it), or None yet."""
        try:
            return self.wait(0)
        except subprocess.TimeoutExpired:
            return None

    def wait(self, timeout: float | None = None) -> int:
        """The return code, waiting at most `timeout` seconds (subprocess.TimeoutExpired)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            if not self._ready(left):
                raise subprocess.TimeoutExpired("sprout-box", timeout or 0.0)
            chunk = self._status.recv(64)
            self._said += chunk
            if not chunk or self._said.endswith(b"\n"):
                self._finish(chunk)
        return self.returncode

    def kill(self) -> None:
        """Ask the launcher to kill the call (and with it its PID namespace)."""
        if self.returncode is None:
            with contextlib.suppress(OSError):
                self._status.shutdown(socket.SHUT_WR)

    def _ready(self, timeout: float | None) -> bool:
        if self.returncode is not None:
            return True
        return _readable(self._status, timeout)

    def _finish(self, last: bytes) -> None:
        """The wait status the launcher sent; none (it was killed, or died): SIGKILL's."""
        self._status.close()
        if last and self._said.strip().lstrip(b"-").isdigit():
            self.returncode = os.waitstatus_to_exitcode(int(self._said))
        else:
            self.returncode = -9


class Launcher:
    """The launcher process of one sandbox and sprout's end of its socket."""

    def __init__(self, process: subprocess.Popen[bytes], channel: socket.socket) -> None:
        self.process = process
        self._channel = channel
        self._send_lock = threading.Lock()

    @classmethod
    def start(cls, helper: str, cgroups: Sequence[str], ids: IdRange | None) -> Launcher:
        """`helper --launcher`, inside `cgroups` (their directories) once it says so; with
        `ids` (run as root), holding the sandbox's user namespace that maps them, which
        every root its calls build joins (box.c's sandbox_users)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        argv = [helper, "--launcher"]
        for directory in cgroups:
            argv += ["--cgroup", directory]
        if ids is not None:
            argv += ["--idmap", str(ids)]
        try:
            channel = theirs.fileno()
            process = subprocess.Popen(
                argv, stdin=channel, stdout=channel, stderr=channel, process_group=0
            )
        except OSError as error:
            ours.close()
            raise SandboxSetupFailed(f"starting the sandbox's launcher: {error}") from None
        finally:
            theirs.close()
        launcher = cls(process, ours)
        said = launcher._first_words()
        if said != "ready":
            launcher.close()
            raise SandboxSetupFailed(f"{helper} --launcher: {said or 'it exited'}")
        return launcher

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def _first_words(self) -> str:
        """ "ready", or what the launcher said before it exited."""
        said = b""
        deadline = time.monotonic() + START_TIMEOUT_S
        while not said.endswith(b"\n"):
            left = deadline - time.monotonic()
            chunk = self._channel.recv(4096) if _readable(self._channel, left) else b""
            if not chunk:
                break
            said += chunk
        return said.decode(errors="replace").strip()

    def launch(
        self, argv: Sequence[str], env: Mapping[str, str], fds: Mapping[int, int]
    ) -> LaunchedCall:
        """Start `argv` (the helper's command line for one call) with `env`; each of our
        descriptors `fds[n]` becomes its descriptor n. Its standard output and error are one
        pipe, read as the result's `stdout`, and its standard input /dev/null."""
        read_end, write_end = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        given = {0: null, 1: write_end, 2: write_end, **fds}
        try:
            self._send(argv, env, given, theirs.fileno())
        except BaseException:
            os.close(read_end)
            ours.close()
            raise
        finally:
            for fd in (null, write_end):
                os.close(fd)
            theirs.close()
        return LaunchedCall(ours, open(read_end, "rb", buffering=0))

    def forget_root(self) -> None:
        """Have the launcher drop the sandbox's mounted root (box.c's view): it reads its
        socket in order, so no call sent after this enters that root (the next mounts the
        layers afresh), and it unmounts the old one beside what sprout does next (seal, or
        write the upper layer). Nothing to wait for: its answer would say no more than the
        order does. A launcher that is gone took the root with it."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with ours, theirs, contextlib.suppress(SandboxSetupFailed):
            self._send([], {}, {}, theirs.fileno())

    def _send(
        self, argv: Sequence[str], env: Mapping[str, str], given: Mapping[int, int], status: int
    ) -> None:
        """One frame (box.c's launcher says how it is laid out)."""
        strings = [str(len(argv)), str(len(env)), *argv]
        strings += [f"{key}={value}" for key, value in env.items()]
        strings += [str(target) for target in given]
        body = b"".join(text.encode() + b"\0" for text in strings)
        descriptors = [*given.values(), status]
        header = struct.pack("=II", len(body), len(descriptors))
        rights = [
            (
                socket.SOL_SOCKET,
                socket.SCM_RIGHTS,
                struct.pack(f"{len(descriptors)}i", *descriptors),
            )
        ]
        with self._send_lock:
            try:
                sent = self._channel.sendmsg([header + body], rights)
                if sent < len(header) + len(body):
                    self._channel.sendall((header + body)[sent:])
            except OSError as error:
                said = self._last_words() or "it said nothing"
                raise SandboxSetupFailed(
                    f"the sandbox's launcher is gone ({error.strerror}): {said}"
                ) from None

    def _last_words(self) -> str:
        """What a launcher that exited wrote before it did (its die() messages)."""
        with contextlib.suppress(OSError):
            self._channel.setblocking(False)
            return self._channel.recv(4096).decode(errors="replace").strip()
        return ""

    def end(self) -> None:
        """Tell the launcher to end (end of file on its socket): calls still running end with
        it, and the root it keeps goes when it has gone (`close` waits for that)."""
        self._channel.close()

    def close(self) -> None:
        """End the launcher and wait until it has gone, and the root it kept with it."""
        self.end()
        try:
            self.process.wait(timeout=EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
