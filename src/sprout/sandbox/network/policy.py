"""The hosts an `allowlist` network reaches, as a task names them.

An entry is a host name (`pypi.org`), a wildcard over a name's subdomains (`*.pythonhosted.org`,
which does not match the name itself) or an IPv4 address, each with an optional `:port`;
without one, every port of that host. Names are what Harbor's `allowed_hosts` lists; the
port narrows it further, as sandlock's and OpenShell's allow-lists do.

The policy is enforced by address: a name's addresses are allowed once the sandbox's own
resolver (network/dns_filter.py) has answered for it. So an IP literal reaches only what an
entry names, and an edited /etc/hosts or resolv.conf changes what the sandbox asks for, not
what it may reach. An address in a range no policy reaches (loopback, private, link-local,
this machine's own) stays refused even when listed: the refusal comes first.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

from sprout.sandbox.errors import BadArgument

Network = bool | tuple[str, ...]
"""A sandbox's network: True is `public`, False `none`, a tuple of entries `allowlist`."""
REFUSED_V4 = (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
    "172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/3",
)  # fmt: skip
"""What no sandbox network reaches: this machine's loopback, private and shared ranges,
link-local (the cloud metadata address 169.254.169.254 among them), benchmarking,
multicast and reserved space."""
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


@dataclass(frozen=True)
class AllowedHost:
    """One entry: a name, `*.` a suffix, or an IPv4 address; `port` None is every port."""

    host: str
    port: int | None = None

    @classmethod
    def parse(cls, entry: str) -> AllowedHost:
        """ValueError naming the entry and what fits, for anything but `host[:port]`."""
        if not isinstance(entry, str) or not entry.strip():
            raise ValueError(f'expected a host such as "pypi.org" or "pypi.org:443", got {entry!r}')
        text = entry.strip().lower().rstrip(".")
        host, port = text, None
        if text.count(":") == 1:
            host, _, number = text.partition(":")
            if not number.isdigit() or not 0 < int(number) < 65536:
                raise ValueError(f"{entry!r}: the port must be a number from 1 to 65535")
            port = int(number)
        elif ":" in text:
            raise ValueError(f"{entry!r}: IPv6 is not reached by any sandbox network")
        if _is_address(host):
            address = ipaddress.IPv4Address(host)
            if any(address in ipaddress.IPv4Network(refused) for refused in REFUSED_V4):
                raise ValueError(
                    f"{entry!r}: a loopback, private or link-local address, which no sandbox "
                    "network reaches"
                )
            return cls(str(address), port)
        name = host.removeprefix("*.")
        labels = name.split(".")
        if "*" in name or not all(_LABEL.match(label) for label in labels):
            raise ValueError(
                f'{entry!r}: expected a host name, "*." and a domain, or an IPv4 address'
            )
        if host.startswith("*.") and len(labels) < 2:
            raise ValueError(f"{entry!r}: a wildcard needs a domain of two labels or more")
        return cls(host, port)

    @property
    def is_address(self) -> bool:
        return _is_address(self.host)

    def matches(self, name: str) -> bool:
        """Whether this entry names `name` (lowercase, without its final dot)."""
        if self.host.startswith("*."):
            return name.endswith(self.host[1:])
        return name == self.host

    def __str__(self) -> str:
        return self.host if self.port is None else f"{self.host}:{self.port}"


def _is_address(host: str) -> bool:
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Allowlist:
    """What an `allowlist` network may reach; empty reaches nothing, as in Harbor."""

    hosts: tuple[AllowedHost, ...]

    @classmethod
    def of(cls, entries: Iterable[str]) -> Allowlist:
        return cls(tuple(AllowedHost.parse(entry) for entry in entries))

    def ports_of(self, name: str) -> tuple[int, ...] | None:
        """The ports `name`'s addresses may be reached on: () for none (the name is not
        listed), None for every port."""
        ports: list[int] = []
        for host in self.hosts:
            if not host.is_address and host.matches(name):
                if host.port is None:
                    return None
                ports.append(host.port)
        return tuple(sorted(set(ports)))

    @property
    def addresses(self) -> tuple[AllowedHost, ...]:
        """The entries that are IPv4 addresses, allowed from the start."""
        return tuple(host for host in self.hosts if host.is_address)


def check_network(network: object) -> Network:
    """`network` as a sandbox takes it; BadArgument naming `network` or the bad entry."""
    if isinstance(network, bool):
        return network
    if isinstance(network, (list, tuple)):
        for index, entry in enumerate(network):
            try:
                AllowedHost.parse(entry)
            except ValueError as error:
                raise BadArgument(f"network[{index}]", str(error)) from None
        return tuple(str(entry).strip() for entry in network)
    raise BadArgument(
        "network",
        f"expected True (public), False (none) or a list of allowed hosts, got {network!r}",
    )
