"""The resolver of an `allowlist` sandbox: it answers for the listed names alone, and lets
the sandbox reach the addresses it answered with.

It is a thread of the process that owns the sandbox, with two sockets: one on port 53 of
the sandbox's own address inside its network namespace (where the firewall sends every DNS
packet, whatever resolver the sandbox names) and one in this machine's namespace, asking
this machine's resolver. Root inside cannot stop it: it is no process of the sandbox's PID
namespace, and the port was bound before any call ran.

For a listed name, an A query goes to this machine's resolver, and each address of the
answer joins the firewall's set of allowed addresses before the answer is relayed, so the
connection that follows is already allowed; AAAA gets an empty answer (no sandbox network
reaches IPv6), any other type is relayed as it is. Every other name is REFUSED. Queries are
served one at a time, so a flood of them costs the upstream resolver one query per round
trip; the firewall caps the packets that reach the thread.
"""

from __future__ import annotations

import os
import select
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sprout.sandbox.errors import SandboxSetupFailed
from sprout.sandbox.network.policy import Allowlist

RESOLV_CONF = Path("/etc/resolv.conf")
UPSTREAM_TIMEOUT_S = 3.0
LISTEN = ("10.0.2.100", 53)
"""slirp4netns's address for the sandbox: a loopback address would need route_localnet to
take the firewall's redirection, which lets 127/8 in from other interfaces too."""
TYPE_A, TYPE_AAAA = 1, 28
SERVFAIL, REFUSED = 2, 5
_HEADER = struct.Struct("!HHHHHH")


@dataclass(frozen=True)
class Question:
    id: int
    name: str
    """Lowercase, without the final dot."""
    type: int
    end: int
    """The offset just past the question in the query."""


def parse_question(query: bytes) -> Question | None:
    """The single question of a query; None for anything else (answered by silence)."""
    if len(query) < _HEADER.size:
        return None
    ident, flags, questions, _, _, _ = _HEADER.unpack_from(query)
    if flags & 0x8000 or questions != 1:
        return None
    labels: list[str] = []
    offset = _HEADER.size
    while offset < len(query) and query[offset] != 0:
        length = query[offset]
        if length > 63 or offset + 1 + length > len(query):
            return None  # a pointer or a truncated label: no query carries one
        labels.append(query[offset + 1 : offset + 1 + length].decode("ascii", "replace"))
        offset += 1 + length
    if offset + 5 > len(query):
        return None
    (qtype,) = struct.unpack_from("!H", query, offset + 1)
    return Question(ident, ".".join(labels).lower(), qtype, offset + 5)


def reply_without_answers(query: bytes, question: Question, rcode: int) -> bytes:
    """The query turned into a reply with `rcode` and no records: REFUSED, or an empty
    NOERROR (no data of that type)."""
    _, flags, _, _, _, _ = _HEADER.unpack_from(query)
    flags = 0x8000 | (flags & 0x7900) | 0x0080 | rcode  # QR, opcode and RD kept, RA, rcode
    return _HEADER.pack(question.id, flags, 1, 0, 0, 0) + query[_HEADER.size : question.end]


def _skip_name(message: bytes, offset: int) -> int:
    while offset < len(message):
        length = message[offset]
        if length & 0xC0 == 0xC0:
            return offset + 2
        if length == 0:
            return offset + 1
        offset += 1 + length
    raise ValueError("a name runs past the message")


def answer_addresses(reply: bytes) -> list[str]:
    """The IPv4 addresses of a reply's answer section, as far as its records are whole."""
    found: list[str] = []
    try:
        _, _, questions, answers, _, _ = _HEADER.unpack_from(reply)
        offset = _HEADER.size
        for _ in range(questions):
            offset = _skip_name(reply, offset) + 4
        for _ in range(answers):
            offset = _skip_name(reply, offset)
            rtype, _, _, length = struct.unpack_from("!HHIH", reply, offset)
            offset += 10
            if offset + length > len(reply):
                break  # a cut record: the whole ones before it stand
            if rtype == TYPE_A and length == 4:
                found.append(socket.inet_ntoa(reply[offset : offset + 4]))
            offset += length
    except (ValueError, struct.error):
        pass
    return found


def upstream_resolver(resolv_conf: Path = RESOLV_CONF) -> tuple[str, int]:
    """This machine's first resolver, as glibc reads it (127.0.0.1 when none is named)."""
    try:
        lines = resolv_conf.read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        words = line.split()
        if len(words) >= 2 and words[0] == "nameserver":
            return words[1].split("%")[0], 53
    return "127.0.0.1", 53


Allow = Callable[[list[str], tuple[int, ...] | None], bool]
"""Lets the sandbox reach addresses on ports (None: every port); it returns once they are,
False where the firewall did not take them (they stay refused, and are tried again at the
next answer)."""
Listen = Callable[[tuple[str, int]], socket.socket]
"""A UDP socket bound to an address inside the sandbox's namespace (SandboxNetwork's)."""


class DnsFilter:
    """One sandbox's resolver; `start` returns once it listens, `close` ends it."""

    def __init__(self, allowlist: Allowlist, listen: Listen, allow: Allow) -> None:
        self.allowlist = allowlist
        self.listen = listen
        self.allow = allow
        self.upstream = upstream_resolver()
        self.allowed: set[tuple[str, tuple[int, ...] | None]] = set()
        """(address, ports) the firewall already allows."""
        self._wake_read, self._wake_write = os.pipe()
        self._ready = threading.Event()
        self._failure: str | None = None
        self._started = False
        self._thread = threading.Thread(target=self._serve, name="sprout-dns", daemon=True)

    def start(self) -> None:
        self._started = True
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            self.close()
            raise SandboxSetupFailed(f"the sandbox's resolver: {self._failure}")

    def close(self) -> None:
        if self._wake_write >= 0:
            os.close(self._wake_write)  # the thread sees end of file and closes the rest
            self._wake_write = -1
            if not self._started:
                os.close(self._wake_read)

    def _serve(self) -> None:
        family = socket.AF_INET6 if ":" in self.upstream[0] else socket.AF_INET
        try:
            listener = self.listen(LISTEN)
        except SandboxSetupFailed as error:
            return self._fail(str(error))
        try:
            upstream = socket.socket(family, socket.SOCK_DGRAM)  # in this machine's namespace
        except OSError as error:
            listener.close()
            return self._fail(str(error))
        self._ready.set()
        waiting = select.poll()  # not select(2): descriptors may be past 1024
        waiting.register(listener, select.POLLIN)
        waiting.register(self._wake_read, select.POLLIN)
        with upstream, listener:
            while True:
                ready = [fd for fd, _ in waiting.poll()]
                if self._wake_read in ready:
                    break
                try:
                    query, client = listener.recvfrom(4096)
                    reply = self._answer(query, upstream)
                    if reply is not None:
                        listener.sendto(reply, client)
                except OSError:
                    continue  # one bad exchange ends no other
        os.close(self._wake_read)

    def _fail(self, problem: str) -> None:
        self._failure = problem
        self._ready.set()
        os.close(self._wake_read)

    def _answer(self, query: bytes, upstream: socket.socket) -> bytes | None:
        question = parse_question(query)
        if question is None:
            return None
        ports = self.allowlist.ports_of(question.name)
        if ports == ():
            return reply_without_answers(query, question, REFUSED)
        if question.type == TYPE_AAAA:
            return reply_without_answers(query, question, 0)
        reply = _ask(upstream, self.upstream, query, question.id)
        if reply is None:
            return reply_without_answers(query, question, SERVFAIL)
        if question.type == TYPE_A:
            new = [a for a in answer_addresses(reply) if (a, ports) not in self.allowed]
            if new and self.allow(new, ports):
                self.allowed.update((a, ports) for a in new)
        return reply


def _ask(
    upstream: socket.socket, resolver: tuple[str, int], query: bytes, ident: int
) -> bytes | None:
    """`resolver`'s reply to `query`; None when it does not answer in time, or cannot be
    reached (the sandbox gets SERVFAIL, and its resolver library may ask again)."""
    deadline = time.monotonic() + UPSTREAM_TIMEOUT_S
    try:
        upstream.sendto(query, resolver)
        while (left := deadline - time.monotonic()) > 0:
            upstream.settimeout(left)
            reply, source = upstream.recvfrom(65535)
            if source[:2] == resolver and reply[:2] == struct.pack("!H", ident):
                return reply
    except OSError:
        pass
    return None


def nft_allow(nft: list[str]) -> Allow:
    """`Allow` through the sandbox's firewall sets (those of network.ruleset), by the command
    `nft` that runs nft in the sandbox's namespace."""

    def allow(addresses: list[str], ports: tuple[int, ...] | None) -> bool:
        if ports is None:
            elements = ", ".join(addresses)
            command = f"add element inet sprout allowed_hosts {{ {elements} }}"
        else:
            elements = ", ".join(f"{a} . {p}" for a in addresses for p in ports)
            command = f"add element inet sprout allowed_ports {{ {elements} }}"
        try:
            done = subprocess.run([*nft, command], capture_output=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return False
        return done.returncode == 0

    return allow
