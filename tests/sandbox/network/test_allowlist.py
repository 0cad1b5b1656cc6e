"""What an allow-list entry means, and the resolver's reading of DNS messages: no sandbox,
no packet."""

from __future__ import annotations

import socket
import struct
import threading
from pathlib import Path

import pytest

from sprout.sandbox import BadArgument, LayerStore, Sandbox
from sprout.sandbox.network.dns_filter import (
    REFUSED,
    DnsFilter,
    answer_addresses,
    parse_question,
    reply_without_answers,
    upstream_resolver,
)
from sprout.sandbox.network.policy import AllowedHost, Allowlist


def _unused(address: tuple[str, int]) -> socket.socket:
    raise AssertionError("this test asks the resolver's answers directly")


def _query(name: str, qtype: int = 1, ident: int = 0x1234) -> bytes:
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.split("."))
    return (
        struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0)
        + labels
        + b"\0"
        + struct.pack("!HH", qtype, 1)
    )


def test_entries_name_hosts_wildcards_and_addresses_with_or_without_a_port() -> None:
    allowlist = Allowlist.of(["PyPI.org.", "*.pythonhosted.org:443", "198.51.100.9:8080"])
    assert allowlist.ports_of("pypi.org") is None, "no port: every port"
    assert allowlist.ports_of("files.pythonhosted.org") == (443,)
    assert allowlist.ports_of("pythonhosted.org") == (), "a wildcard is the subdomains alone"
    assert allowlist.ports_of("evilpythonhosted.org") == ()
    assert allowlist.ports_of("198.51.100.9") == (), "an address is no name"
    assert allowlist.addresses == (AllowedHost("198.51.100.9", 8080),)


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("", "expected a host"),
        ("pypi.org:0", "port must be a number"),
        ("pypi.org:https", "port must be a number"),
        ("fd00::1", "IPv6"),
        ("10.1.2.3", "private"),
        ("127.0.0.1:80", "loopback"),
        ("169.254.169.254", "link-local"),
        ("*.org", "two labels"),
        ("py*.org", "expected a host name"),
        ("exa mple.org", "expected a host name"),
    ],
)
def test_a_bad_entry_is_refused_naming_it(entry: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        AllowedHost.parse(entry)


def test_a_sandbox_refuses_a_bad_allow_list_naming_the_entry(tmp_path: Path) -> None:
    store = LayerStore(tmp_path / "layers")
    with pytest.raises(BadArgument, match=r"^network\[1\]: '10.0.0.1'"):
        Sandbox.create(store, network=["pypi.org", "10.0.0.1"])
    with pytest.raises(BadArgument, match=r"^network: expected True"):
        Sandbox.create(store, network="public")  # type: ignore[arg-type]


def test_a_query_is_read_and_refused_with_its_question() -> None:
    query = _query("Files.PythonHosted.org", qtype=28)
    question = parse_question(query)
    assert question is not None
    assert (question.id, question.name, question.type) == (0x1234, "files.pythonhosted.org", 28)
    reply = reply_without_answers(query, question, REFUSED)
    ident, flags, questions, answers, _, _ = struct.unpack_from("!HHHHHH", reply)
    assert (ident, flags & 0x8000, flags & 0xF, questions, answers) == (0x1234, 0x8000, 5, 1, 0)
    assert reply[12:] == query[12:], "the question comes back as it was asked"
    assert parse_question(reply) is None, "a reply is no query"
    assert parse_question(b"\0" * 5) is None


def test_the_addresses_of_an_answer_are_read_through_a_cname() -> None:
    query = _query("pypi.org")
    cname = b"\x04dual\xc0\x0c"
    answer = (
        b"\xc0\x0c" + struct.pack("!HHIH", 5, 1, 60, len(cname)) + cname
        + b"\xc0\x1a" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton("198.51.100.20")
        + b"\xc0\x1a" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton("198.51.100.21")
    )  # fmt: skip
    reply = struct.pack("!HHHHHH", 0x1234, 0x8180, 1, 3, 0, 0) + query[12:] + answer
    assert answer_addresses(reply) == ["198.51.100.20", "198.51.100.21"]
    assert answer_addresses(reply[:-3]) == ["198.51.100.20"], "a cut answer: what is whole"


def test_the_upstream_is_this_machines_first_resolver(tmp_path: Path) -> None:
    conf = tmp_path / "resolv.conf"
    conf.write_text("# a comment\nsearch example.org\nnameserver 198.51.100.53\nnameserver x\n")
    assert upstream_resolver(conf) == ("198.51.100.53", 53)
    conf.write_text("options edns0\n")
    assert upstream_resolver(conf) == ("127.0.0.1", 53), "glibc's default"


def test_the_resolver_asks_upstream_for_listed_names_alone_and_retries_what_failed() -> None:
    """`DnsFilter._answer` against a resolver on this machine's loopback: a name not listed
    never reaches it, AAAA is answered empty, and an address the firewall did not take is
    offered to it again with the next answer."""
    upstream_server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    upstream_server.bind(("127.0.0.1", 0))
    asked: list[str] = []

    def answer() -> None:
        for _ in range(2):
            query, peer = upstream_server.recvfrom(512)
            question = parse_question(query)
            assert question is not None
            asked.append(question.name)
            record = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4)
            record += socket.inet_aton("198.51.100.30")
            header = struct.pack("!HHHHHH", question.id, 0x8180, 1, 1, 0, 0)
            upstream_server.sendto(header + query[12 : question.end] + record, peer)

    server = threading.Thread(target=answer)
    server.start()
    offered: list[tuple[list[str], tuple[int, ...] | None]] = []
    takes = iter([False, True])

    def allow(addresses: list[str], ports: tuple[int, ...] | None) -> bool:
        offered.append((addresses, ports))
        return next(takes)

    resolver = DnsFilter(Allowlist.of(["pypi.org:443"]), _unused, allow)
    resolver.upstream = upstream_server.getsockname()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as upstream:
        refused = resolver._answer(_query("evil.example"), upstream)
        assert refused is not None and refused[3] & 0xF == REFUSED
        empty = resolver._answer(_query("pypi.org", qtype=28), upstream)
        assert empty is not None and empty[3] & 0xF == 0 and empty[6:8] == b"\0\0"
        for _ in range(2):
            reply = resolver._answer(_query("pypi.org"), upstream)
            assert reply is not None and answer_addresses(reply) == ["198.51.100.30"]
    server.join(timeout=10)
    upstream_server.close()
    resolver.close()
    assert asked == ["pypi.org", "pypi.org"], "only the listed name's A queries went up"
    assert offered == [(["198.51.100.30"], (443,))] * 2, "not taken the first time: again"
