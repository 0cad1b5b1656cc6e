"""The sandbox cgroups of this machine, for the tests of limits and of the launcher: whether
there are any (a test skips without them, or fails as root under SPROUT_REQUIRE_SANDBOX=1),
and the ones this test process has made, seen on the host."""

from __future__ import annotations

import os

import pytest

from sprout.sandbox.jail import cgroups


def require_sandbox_cgroups() -> cgroups.CgroupSupport:
    """Where this machine makes sandbox cgroups; skips (or fails) the test where it makes
    none."""
    found = cgroups.support()
    if found.missing:
        if os.environ.get("SPROUT_REQUIRE_SANDBOX") == "1" and os.geteuid() == 0:
            pytest.fail(f"root without sandbox cgroups: {found.describe()}")
        pytest.skip(f"no cgroup for sandboxes here: {found.describe()}")
    return found


def own_cgroups(found: cgroups.CgroupSupport) -> set[str]:
    """The sandbox cgroups this process has made, seen on the host."""
    prefix = f"sprout-{os.getpid()}-"
    return {
        os.path.join(parent, name)
        for parent in set(found.parents.values())
        for name in os.listdir(parent)
        if name.startswith(prefix)
    }


def processes_in(directory: str) -> set[int]:
    """The processes in cgroup `directory`, as the host sees them."""
    with open(os.path.join(directory, "cgroup.procs"), encoding="ascii") as handle:
        return {int(line) for line in handle if line.strip()}
