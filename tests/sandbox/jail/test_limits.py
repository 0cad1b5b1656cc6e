"""Limits that bind root inside: processes, memory and CPU through the sandbox's cgroup.

Each hog is bounded from outside too (the call's timeout, sizes a machine
survives without the limit), and ends as an ordinary failed command.
"""

from __future__ import annotations

import os

import pytest

from sprout.sandbox import LayerStore, Limits, Sandbox, teardown
from sprout.sandbox.jail import cgroups
from tests.support.sandbox_cgroups import own_cgroups, require_sandbox_cgroups

pytestmark = pytest.mark.sandbox

MIB = 1024**2


@pytest.fixture
def cgroup_support() -> cgroups.CgroupSupport:
    return require_sandbox_cgroups()


FORK_BOMB = """python3 -c '
import os, time
forked = 0
while forked < 500:
    try:
        pid = os.fork()
    except OSError as error:
        print(error.strerror, forked)
        break
    if pid == 0:
        time.sleep({seconds})
        os._exit(0)
    forked += 1
'"""


def test_a_fork_bomb_stops_at_the_process_limit(overlay_store, cgroup_support, procs, marker):
    with Sandbox.create(overlay_store, limits=Limits(processes=50)) as sandbox:
        observation = sandbox.run(FORK_BOMB.format(seconds=marker), timeout=60)
        message, _, forked = observation.output.strip().rpartition(" ")
        assert message == "Resource temporarily unavailable", observation.output
        assert int(forked) <= 49  # python is the 50th process (the launcher's are extra)
        assert sandbox.run("echo still usable").output == "still usable\n"
    assert procs.survivors(marker) == []


def test_memory_over_the_limit_fails_the_command_not_the_run(overlay_store, cgroup_support):
    allocate = "python3 -c 'x = bytearray({} * 1024 * 1024); print(len(x))'"
    with Sandbox.create(overlay_store, limits=Limits(memory_bytes=256 * MIB)) as sandbox:
        hog = sandbox.run(allocate.format(1024), timeout=60)
        small = sandbox.run(allocate.format(64), timeout=60)
    assert hog.exit_code != 0 and str(1024 * MIB) not in hog.output
    assert small.exit_code == 0 and small.output == f"{64 * MIB}\n"


def test_cpu_quota_throttles_a_busy_loop(overlay_store, cgroup_support):
    busy = (
        "python3 -c 'import os, time\n"
        "start = time.time()\n"
        "while time.time() - start < 1.5: pass\n"
        "print(round(os.times().user / (time.time() - start), 2))'"
    )
    with Sandbox.create(overlay_store, limits=Limits(cpus=0.2)) as sandbox:
        share = float(sandbox.run(busy, timeout=60).output)
    assert share < 0.5, f"a busy loop got {share} of a CPU under a 0.2 CPU quota"


def test_a_layer_over_its_disk_cap_fails_the_write(btrfs_with_quotas, tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    with open(files / "big", "wb") as handle:
        handle.write(os.urandom(1024) * (80 * 1024))  # 80 MiB in a lower layer
    store = LayerStore(btrfs_with_quotas / "store", max_stack=3)
    assert store.capped
    limits = Limits(disk_bytes=50 * MIB)
    with Sandbox.create(store, files=files, limits=limits) as sandbox:
        grown = sandbox.run("echo one more line >> big && tail -c 14 big")
        assert grown.output == "one more line\n", "copy-up of a big lower file is not cloned"
        hog = sandbox.run("dd if=/dev/zero of=filler bs=1M count=200 2>&1", timeout=60)
        assert hog.exit_code != 0 and "Disk quota exceeded" in hog.output
        first = sandbox.checkpoint()
        for turn in range(4):  # a fresh layer gets the cap, and deep stacks squash
            assert sandbox.run(f"head -c 30M /dev/zero > more{turn}").exit_code == 0
            last = sandbox.checkpoint()
    assert any(layer.flat for layer in store.layers()), "no squash across subvolumes"
    with Sandbox.fork(store, last) as fork:
        assert fork.run("ls").output == "big\nfiller\nmore0\nmore1\nmore2\nmore3\n"
    assert store.gc(keep=[first]) > 0
    assert len(os.listdir(btrfs_with_quotas / "store" / "s")) == len(store.layers())


def test_each_sandbox_has_its_own_cgroup_which_goes_when_it_closes(overlay_store, cgroup_support):
    hierarchies = len(set(cgroup_support.parents.values()))
    with Sandbox.create(overlay_store) as first, Sandbox.create(overlay_store) as second:
        inside = first.run("cat /proc/self/cgroup").output.splitlines()
        assert all(line.endswith(":/") for line in inside), inside
        second.run("true")
        made = {*first._backend.cgroup.directories, *second._backend.cgroup.directories}
        assert len(made) == 2 * hierarchies and made <= own_cgroups(cgroup_support)
        first.run("sleep 30", timeout=0.5)  # killed mid-call: its cgroup is reused
        assert first.run("echo ok").output == "ok\n"
    teardown.drain()
    assert not made & own_cgroups(cgroup_support)


V1_MOUNTINFO = """\
25 22 0:23 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
26 25 0:24 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
28 25 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
31 25 0:29 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
33 25 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V1_CGROUP = "8:pids:/\n4:memory:/jobs/42\n1:cpu:/\n0::/\n"


def test_v1_controllers_are_found_under_the_process_own_cgroup(tmp_path):
    mountinfo = V1_MOUNTINFO.replace("/sys/fs/cgroup", str(tmp_path))
    for sub in ("cpu", "memory/jobs/42", "pids"):
        (tmp_path / sub).mkdir(parents=True)
    found = cgroups.probe_support(mountinfo, V1_CGROUP)
    assert found.parents == {
        "memory": f"{tmp_path}/memory/jobs/42",
        "pids": f"{tmp_path}/pids/",
        "cpu": f"{tmp_path}/cpu/",
    }
    assert set(found.versions.values()) == {1} and found.missing == ()


def test_v2_without_delegated_controllers_is_reported_not_used(tmp_path):
    """A folder laid out like a cgroup2 directory: this machine has no v2 controllers to try."""
    mountinfo = f"30 25 0:27 / {tmp_path} rw - cgroup2 cgroup2 rw\n"
    own = tmp_path / "user.slice" / "session.scope"
    own.mkdir(parents=True)
    (own / "cgroup.controllers").write_text("memory\n")
    (own / "cgroup.subtree_control").write_text("memory\n")
    found = cgroups.probe_support(mountinfo, "0::/user.slice/session.scope\n")
    assert found.parents == {"memory": str(own)} and found.versions == {"memory": 2}
    assert "not enabled" in found.problems["pids"] and "not enabled" in found.problems["cpu"]
    assert found.missing == ("pids", "cpu")
