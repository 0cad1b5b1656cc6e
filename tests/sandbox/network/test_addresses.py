"""This machine's IPv4 addresses, read without `ip` (network/addresses.py): the list `ip`
gives, since every firewall refuses them and a spare network is checked against them."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter

import pytest

from sprout.sandbox.network.addresses import ipv4_addresses


def test_the_fast_reader_lists_what_ip_addr_lists() -> None:
    if shutil.which("ip") is None:
        pytest.skip("needs ip (apt-get install iproute2) to compare with")
    shown = subprocess.run(["ip", "-j", "-4", "addr", "show"], capture_output=True, text=True)
    listed = json.loads(shown.stdout)
    expected = [a["local"] for i in listed for a in i.get("addr_info", []) if a.get("local")]
    assert Counter(ipv4_addresses()) == Counter(expected)
    assert "127.0.0.1" in expected, "no loopback address: nothing was compared"
