"""This machine's own IPv4 addresses, read without a subprocess.

The firewall of every `public` and `allowlist` network refuses them, so each network's
start reads them, and a spare network (backends/spares.py) reads them again when it is
taken, to tell whether its firewall is still right: `ip -j addr show` cost 3.5 ms a read,
the SIOCGIFCONF ioctl a few microseconds. It lists every IPv4 address of every interface
of the reader's network namespace (this machine's), up or down, secondary ones included,
as `ip addr` does (the local /32 entries of /proc/net/fib_trie would leave out a down
interface's). IPv6 addresses are not read: the firewall refuses all IPv6 but loopback,
whatever this machine's are, and a spare made stale by a rotating temporary IPv6 address
would be discarded for nothing.
"""

from __future__ import annotations

import array
import fcntl
import socket
import struct

SIOCGIFCONF = 0x8912
_IFCONF = "iP"
"""struct ifconf: the buffer's length, then its address."""
_IFREQ_SIZE = 16 + max(16, struct.calcsize("LLHBBB0L"))
"""struct ifreq: the interface's name, then a union whose largest member is struct ifmap."""
_ADDRESS_AT = 16 + 4
"""Where sin_addr lies in an ifreq: after the name, sin_family and sin_port."""


def ipv4_addresses() -> list[str]:
    """The IPv4 addresses of every interface, in the kernel's order."""
    entries = 16
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        while True:
            buffer = array.array("B", bytes(entries * _IFREQ_SIZE))
            request = struct.pack(_IFCONF, len(buffer), buffer.buffer_info()[0])
            answer = fcntl.ioctl(probe.fileno(), SIOCGIFCONF, request)
            length = struct.unpack(_IFCONF, answer)[0]
            if length + _IFREQ_SIZE <= len(buffer):  # room to spare: nothing was cut
                break
            entries *= 4
    listed = buffer.tobytes()
    return [
        socket.inet_ntoa(listed[start + _ADDRESS_AT : start + _ADDRESS_AT + 4])
        for start in range(0, length, _IFREQ_SIZE)
    ]
