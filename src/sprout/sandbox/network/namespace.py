"""A sandbox's network: a namespace of its own, held for the sandbox's life, under a policy.

Every sandbox gets one network namespace, held by `sprout-box --hold-network`, made at its
first call or ahead of it as a spare (backends/spares.py); each call joins it (box.c's
--netns-fd). As root it is owned by host root; rootless, by a user namespace of the
holder's, inside which each call makes its own (--userns-fd). Either way root inside holds
no CAP_NET_ADMIN over it and can change none of its addresses, routes or firewall rules. A
fork gets a namespace of its own; closing the sandbox ends its holder and stack.

Policies, as Harbor names them:
- `none`: loopback only.
- `public`: outbound internet through slirp4netns, a user-mode stack that makes each of the
  sandbox's connections as an ordinary socket of this machine. It runs with
  --disable-host-loopback (its gateway never leads to the host's loopback), no API socket
  (so no port is forwarded either way) and its own sandbox and seccomp filter. Below the
  sandbox, in its namespace, an nftables table that only host root can change refuses every
  loopback, private, shared, link-local, multicast and reserved IPv4 range, each address of
  this machine's own interfaces, and all IPv6 but loopback; DNS to any resolver is sent to
  the stack's, which asks this machine's resolver.
- `allowlist`: `public` narrowed to the hosts a task names (network/policy.py). The
  firewall sends every DNS packet to the sandbox's own resolver (network/dns_filter.py),
  which refuses every other name and adds the addresses it answers with to the firewall's
  sets; every other address is refused, whatever the sandbox's /etc/hosts or resolv.conf
  say.

The trade against a veth pair with NAT: that needs the host's forwarding sysctl and rules
in the host's own firewall, which a sandbox's lifetime would have to keep in step with the
host's; the user-mode stack changes nothing on the host and dies with its sandbox.
"""

from __future__ import annotations

import functools
import ipaddress
import os
import select
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Literal

from sprout.sandbox.errors import BadArgument, SandboxSetupFailed, SandboxUnavailable
from sprout.sandbox.network.addresses import ipv4_addresses
from sprout.sandbox.network.dns_filter import LISTEN, DnsFilter, nft_allow
from sprout.sandbox.network.policy import REFUSED_V4, Allowlist, Network
from sprout.sandbox.system_tools import system_tool
from sprout.sandbox.teardown import later

Policy = Literal["none", "public", "allowlist"]
STACK = "slirp4netns"
"""The user-mode network stack of `public`, and its Debian package."""
FIREWALL = "nft"
FIREWALL_PACKAGE = "nftables"
STACK_DNS = "10.0.2.3"
"""The stack's resolver inside the sandbox (slirp4netns's default network 10.0.2.0/24)."""
START_TIMEOUT_S = 10.0
"""How long the firewall and the stack may take to come up."""


REFUSE_ENV = "SPROUT_NETWORK_REFUSE"
"""IPv4 addresses (or ranges) no sandbox of this process reaches, beyond this machine's own,
comma-separated: the model servers of the run (`refuse`), which may be another machine's
public address. Processes this one starts inherit it."""
DNS_RATE = "200/second burst 400 packets"
"""The DNS packets an `allowlist` sandbox may send its resolver, a thread of sprout's own."""


def policy_of(network: Network) -> Policy:
    """A sandbox's `network`: True is `public`, False `none`, a tuple of hosts `allowlist`."""
    if isinstance(network, bool):
        return "public" if network else "none"
    return "allowlist"


def missing_tools(policy: Policy) -> list[str]:
    """The Debian packages `policy` needs and this machine lacks."""
    if policy == "none":
        return []
    wanted = {STACK: STACK, FIREWALL: FIREWALL_PACKAGE, "nsenter": "util-linux"}
    return [package for tool, package in wanted.items() if system_tool(tool) is None]


def refuse_addresses(addresses: list[str]) -> None:
    """Add `addresses` to REFUSE_ENV, for every sandbox this process opens from now on. What
    the variable held is read (and so checked) first, even with no address to add: a run
    that starts is told of a malformed value it would otherwise carry to its sandboxes."""
    known = refused_by_run()
    if addresses:
        os.environ[REFUSE_ENV] = ",".join(dict.fromkeys([*known, *addresses]))


def refused_by_run() -> list[str]:
    """REFUSE_ENV's ranges, each once; BadArgument naming the variable for one that is none."""
    found = []
    for part in os.environ.get(REFUSE_ENV, "").split(","):
        if part.strip():
            try:
                found.append(str(ipaddress.IPv4Network(part.strip(), strict=False)))
            except ValueError:
                raise BadArgument(
                    REFUSE_ENV,
                    "expected IPv4 addresses or ranges, comma-separated (e.g. "
                    f"198.51.100.7,10.0.0.0/8), got {part.strip()!r}",
                ) from None
    return list(dict.fromkeys(found))


def firewall_refuses() -> tuple[str, ...]:
    """What a firewall written now refuses beyond REFUSED_V4: this machine's IPv4 addresses
    and the run's (REFUSE_ENV), each once, sorted. (IPv6 is refused whole, whatever this
    machine's IPv6 addresses are.) A spare network whose firewall was written from another
    answer is stale (`SandboxNetwork.usable`)."""
    return tuple(sorted({*ipv4_addresses(), *refused_by_run()}))


def _tool(name: str) -> str:
    """`name`'s path; missing_tools has checked it is there."""
    return system_tool(name) or name


def _stack_argv(netns: str, ready_fd: int, exit_fd: int, owner: list[str]) -> list[str]:
    """slirp4netns for the namespace at `netns`. Its --enable-sandbox makes a mount namespace
    and detaches the old root: made from one with shared mounts, that unmounted their host
    copies too (seen here: the host's /run/netns/* went), so it starts in a private one.
    `owner` (rootless) enters the user namespace owning `netns` first; the stack's sockets
    stay in this machine's network namespace either way."""
    return [
        *(["nsenter", *owner] if owner else []),
        "unshare", "--mount", "--propagation", "private",
        _tool(STACK), "--configure", "--mtu=65520", "--disable-host-loopback", "--enable-sandbox",
        "--enable-seccomp", f"--ready-fd={ready_fd}", f"--exit-fd={exit_fd}",
        "--netns-type=path", netns, "tap0",
    ]  # fmt: skip


def ruleset(own: tuple[str, ...], allowlist: Allowlist | None = None) -> str:
    """The nftables tables of `public` (`allowlist` None) or of that allow-list, for the
    sandbox's namespace; `own` is what `firewall_refuses` answered."""
    refused = ", ".join([*REFUSED_V4, *own])
    if allowlist is None:
        resolver = STACK_DNS
        dns = f"ip daddr {STACK_DNS} meta l4proto {{ tcp, udp }} th dport 53 accept"
        allowed = "meta nfproto ipv4 accept"
        sets = ""
    else:
        resolver = LISTEN[0]
        dns = (  # the chain sees the redirected packet with its first route, not lo's
            f"ip daddr {resolver} udp dport 53 limit rate over {DNS_RATE} drop\n"
            f"    ip daddr {resolver} udp dport 53 accept"
        )
        allowed = (
            "ip daddr @allowed_hosts accept\n"
            "    meta l4proto { tcp, udp } ip daddr . th dport @allowed_ports accept"
        )
        sets = _allowlist_sets(allowlist)
    return f"""
table ip sprout_dns {{
  chain out {{
    type nat hook output priority -100; policy accept;
    ip daddr != {resolver} meta l4proto {{ tcp, udp }} th dport 53 dnat to {resolver}
  }}
}}
table inet sprout {{
{sets}  chain out {{
    type filter hook output priority 0; policy drop;
    {dns}
    oif "lo" accept
    ip daddr {{ {refused} }} reject with icmpx type admin-prohibited
    {allowed}
    reject with icmpx type admin-prohibited
  }}
}}
"""


def _allowlist_sets(allowlist: Allowlist) -> str:
    """The sets the resolver fills, holding from the start the entries that are addresses."""
    hosts = [str(h.host) for h in allowlist.addresses if h.port is None]
    ports = [f"{h.host} . {h.port}" for h in allowlist.addresses if h.port is not None]
    return (
        f"  set allowed_hosts {{ type ipv4_addr;{_elements(hosts)} }}\n"
        f"  set allowed_ports {{ type ipv4_addr . inet_service;{_elements(ports)} }}\n"
    )


def _elements(elements: list[str]) -> str:
    return f" elements = {{ {', '.join(elements)} }};" if elements else ""


@dataclass
class SandboxNetwork:
    """One sandbox's namespace, held open, and the stack serving it."""

    policy: Policy
    helper: str
    holder: subprocess.Popen[bytes]
    fd: int
    """The namespace, for box.c's --netns-fd (close-on-exec here; passed with pass_fds)."""
    user_fd: int = -1
    """Rootless, the user namespace owning it, for box.c's --userns-fd; else -1."""
    stack: subprocess.Popen[bytes] | None = None
    stack_exit: int | None = None
    """Our end of the pipe the stack watches (its --exit-fd): closing it ends the stack."""
    resolver: DnsFilter | None = None
    """The resolver of `allowlist`."""
    refuses: tuple[str, ...] | None = None
    """What its firewall refuses beyond REFUSED_V4 (`firewall_refuses` when it was written);
    None without a firewall."""

    @classmethod
    def start(cls, helper: str, setting: Network, rootless: bool = False) -> SandboxNetwork:
        """A new namespace with loopback up, and for `public` and `allowlist` their firewall,
        stack and (for `allowlist`) resolver; `rootless` for a sandbox of the rootless mode."""
        policy = policy_of(setting)
        missing = missing_tools(policy)
        if missing:
            raise SandboxUnavailable(
                f"network {policy!r} needs {', '.join(missing)} (apt-get install "
                f"{' '.join(missing)}), or run with --isolation none"
            )
        holder = subprocess.Popen(
            [helper, "--hold-network", *(["--rootless"] if rootless else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert holder.stdout is not None and holder.stderr is not None
        if holder.stdout.readline() != b"ready\n":
            holder.kill()
            holder.wait()
            said = holder.stderr.read().decode(errors="replace").strip() or "it exited"
            raise SandboxSetupFailed(f"{helper} --hold-network: {said}")
        network = cls(policy, helper, holder, os.open(f"/proc/{holder.pid}/ns/net", os.O_RDONLY))
        if rootless:
            network.user_fd = os.open(f"/proc/{holder.pid}/ns/user", os.O_RDONLY)
        try:
            if isinstance(setting, tuple):
                allowlist = Allowlist.of(setting)
                network.resolver = DnsFilter(
                    allowlist, network.udp_socket, nft_allow([*network.enter(), _tool(FIREWALL)])
                )
                network._start_stack(allowlist)
                network.resolver.start()
            elif setting:
                network._start_stack(None)
        except BaseException:
            network.close()
            raise
        return network

    @property
    def usable(self) -> bool:
        """Whether its processes still run and its firewall still refuses what one written
        now would: this machine's addresses and the run's refusals may have changed since
        (checked before a spare, made earlier, is given to a sandbox)."""
        processes = [self.holder] if self.stack is None else [self.holder, self.stack]
        if any(process.poll() is not None for process in processes):
            return False
        return self.refuses is None or self.refuses == firewall_refuses()

    @property
    def path(self) -> str:
        return f"/proc/{self.holder.pid}/ns/net"

    @property
    def fds(self) -> tuple[int, ...]:
        """What a call inherits: the namespace and, rootless, its user namespace."""
        return (self.fd,) if self.user_fd < 0 else (self.fd, self.user_fd)

    def _owner(self) -> list[str]:
        """nsenter's flag that makes a tool (the stack, nft) privileged over the namespace:
        rootless, by entering the user namespace that owns it."""
        return (
            []
            if self.user_fd < 0
            else [
                f"--user=/proc/{self.holder.pid}/ns/user",
                "--preserve-credentials",  # its ids are mapped already; setgroups is denied
            ]
        )

    def enter(self) -> list[str]:
        """The command prefix that runs a tool in the namespace, privileged over it."""
        return ["nsenter", *self._owner(), f"--net={self.path}"]

    def udp_socket(self, address: tuple[str, int]) -> socket.socket:
        """A UDP socket bound to `address` inside the namespace, made there by the helper's
        --bind-udp and handed over: setns would need root, which a rootless owner is not."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        with ours:
            try:
                made = subprocess.run(
                    [*self.enter(), self.helper, "--bind-udp", address[0], str(address[1]),
                     str(theirs.fileno())],
                    pass_fds=(theirs.fileno(),),
                    capture_output=True,
                    timeout=START_TIMEOUT_S,
                )  # fmt: skip
            except (OSError, subprocess.SubprocessError) as error:
                raise SandboxSetupFailed(f"binding {address} inside: {error}") from None
            finally:
                theirs.close()
            if made.returncode != 0:
                said = made.stderr.decode(errors="replace").strip() or "it failed"
                raise SandboxSetupFailed(f"binding {address} inside: {said}")
            _, fds, _, _ = socket.recv_fds(ours, 1, 1)
        return socket.socket(fileno=fds[0])

    def _start_stack(self, allowlist: Allowlist | None) -> None:
        """The stack, this machine's addresses and the firewall are made at the same time; no
        packet leaves before all are up, since no call runs until then."""
        ready_read, ready_write = os.pipe()
        exit_read, self.stack_exit = os.pipe()
        with tempfile.TemporaryFile() as said_by_stack:  # a pipe nobody reads could stall it
            try:
                self.stack = subprocess.Popen(
                    _stack_argv(self.path, ready_write, exit_read, self._owner()),
                    stdout=subprocess.DEVNULL,
                    stderr=said_by_stack,
                    pass_fds=(ready_write, exit_read),
                )
            finally:
                os.close(ready_write)
                os.close(exit_read)
            try:
                firewall = subprocess.Popen(
                    [*self.enter(), _tool(FIREWALL), "-f", "-"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                )
                self.refuses = firewall_refuses()
                rules = ruleset(self.refuses, allowlist)
                said, _ = firewall.communicate(rules.encode(), timeout=START_TIMEOUT_S)
                if firewall.returncode != 0:
                    raise SandboxSetupFailed(
                        f"the sandbox's firewall (nft): {said.decode().strip()}"
                    )
                waiting = select.poll()  # not select(2): descriptors may be past 1024
                waiting.register(ready_read, select.POLLIN)
                if not waiting.poll(START_TIMEOUT_S * 1000) or not os.read(ready_read, 1):
                    said_by_stack.seek(0)
                    problem = said_by_stack.read().decode(errors="replace").strip()
                    raise SandboxSetupFailed(
                        f"the sandbox's network stack ({STACK}): {problem or 'not ready'}"
                    )
            finally:
                os.close(ready_read)

    def close(self) -> None:
        """End the stack and the holder; the namespace goes with the last of them. The
        kernel takes 15-30 ms to tear the stack's device down: they are reaped on the
        teardown thread (sandbox/teardown.py), not on the caller's time."""
        if self.resolver is not None:
            self.resolver.close()
            self.resolver = None
        if self.stack_exit is not None:
            os.close(self.stack_exit)
            self.stack_exit = None
        for fd in (self.fd, self.user_fd):
            if fd >= 0:
                os.close(fd)
        self.fd = self.user_fd = -1
        for process in (self.stack, self.holder):
            if process is not None:
                process.kill()  # neither holds anything to flush
                later(functools.partial(_reap, process))


def _reap(process: subprocess.Popen[bytes]) -> None:
    process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()
