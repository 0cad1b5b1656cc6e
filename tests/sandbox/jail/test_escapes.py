"""A hostile agent's attacks on the jail, each tried from inside and checked on the host.

Every attack is harmless if it succeeds: it writes a canary into this test's
temporary folder, makes a cgroup with this test's own name, writes a kernel
setting back with the value it already has, or reads a file the test made.
What the test checks is the host: the canary is absent, the cgroup does not
exist, the secret was not printed.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sprout.sandbox import LayerStore, Sandbox
from tests.support.nobody import run_script
from tests.support.requirements import require_host_image
from tests.support.taskfolders import write_files

pytestmark = pytest.mark.sandbox

PROBE_SOURCE = Path(__file__).with_name("escape_probe.c")

REFUSED = {
    "mknod_block": {errno.EPERM},
    "mount_tmpfs": {errno.EPERM},
    "mount_cgroup2": {errno.EPERM},
    "mount_sysfs": {errno.EPERM},
    "umount_proc_sys": {errno.EPERM},
    "umount_proc": {errno.EPERM},
    "pivot_root": {errno.EPERM},
    "open_tree": {errno.EPERM},
    "fsopen": {errno.EPERM},
    "open_by_handle_at": {errno.EPERM},
    "init_module": {errno.EPERM},
    "finit_module": {errno.EPERM},
    "delete_module": {errno.EPERM},
    "kexec_load": {errno.EPERM},
    "bpf": {errno.EPERM},
    "perf_event_open": {errno.EPERM},
    "keyctl": {errno.EPERM},
    "add_key": {errno.EPERM},
    "userfaultfd": {errno.EPERM},
    "unshare_user": {errno.EPERM},
    "unshare_mount": {errno.EPERM},
    "clone3": {errno.ENOSYS},
    "setns": {errno.EPERM},
    "reboot_bad_magic": {errno.EPERM},
    "swapon": {errno.EPERM},
    "syslog_read": {errno.EPERM},
    "acct": {errno.EPERM},
    "clock_settime_same": {errno.EPERM},
    "sethostname": {errno.EPERM},
    "io_uring_setup": {errno.EPERM},
    "ptrace_init": {errno.EPERM},
    "chroot_escape_open_root": {errno.EACCES},
    "write_core_pattern": {errno.EROFS, errno.EACCES},
    "write_sysrq_trigger": {errno.EROFS, errno.EACCES, errno.ENOENT},
    "read_init_environ": {errno.EACCES},
}
"""What each of escape_probe.c's attempts must get: the errno of a refusal, never 0 (done)
nor an error from past the permission check (EINVAL, EFAULT)."""


@pytest.fixture(scope="session")
def probe(shared_tmp: Path) -> Path:
    """escape_probe.c compiled for this machine (the images below share its libc)."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler to build the escape probe")
    target = shared_tmp / "escape-probe"
    subprocess.run([compiler, "-O2", "-o", str(target), str(PROBE_SOURCE)], check=True)
    target.chmod(0o755)
    return target


def parse_probe(output: str) -> dict[str, int]:
    results = {}
    for line in output.splitlines():
        name, _, code = line.partition(" ")
        if code.isdigit():
            results[name] = int(code)
    return results


def _names(codes: set[int]) -> list[str]:
    return sorted(errno.errorcode[code] for code in codes)


def assert_all_refused(results: dict[str, int]) -> None:
    assert set(results) == set(REFUSED), results
    wrong = {
        name: f"{errno.errorcode.get(code, code)}, wanted one of {_names(REFUSED[name])}"
        for name, code in results.items()
        if code not in REFUSED[name]
    }
    assert wrong == {}, "these calls were not refused"


@pytest.fixture
def files_with_probe(tmp_path: Path, probe: Path) -> Path:
    files = tmp_path / "files"
    files.mkdir()
    shutil.copy(probe, files / "probe")
    return files


def test_every_escape_call_is_refused_as_root(overlay_store, files_with_probe, tmp_path):
    device = os.stat(tmp_path).st_dev
    command = f"./probe /tmp/disk {os.major(device)} {os.minor(device)}"
    with Sandbox.create(overlay_store, files=files_with_probe) as sandbox:
        observation = sandbox.run(command, timeout=60)
    assert observation.exit_code == 0, observation.output
    assert_all_refused(parse_probe(observation.output))


def test_host_disk_cannot_be_mounted_and_written(overlay_store, tmp_path):
    device = os.stat(tmp_path).st_dev
    canary = tmp_path / "canary"
    inside = os.path.relpath(tmp_path, _mount_point_of(tmp_path))
    attack = (
        f"mknod /tmp/disk b {os.major(device)} {os.minor(device)}; mkdir -p /tmp/host; "
        f"mount /tmp/disk /tmp/host; echo pwned > /tmp/host/{inside}/canary; "
        f"cat /tmp/host/{inside}/canary"
    )
    with Sandbox.create(overlay_store) as sandbox:
        observation = sandbox.run(attack, timeout=30)
    assert "pwned" not in observation.output
    assert not canary.exists()


def _mount_point_of(path: Path) -> Path:
    path = path.resolve()
    while not os.path.ismount(path):
        path = path.parent
    return path


def test_kernel_settings_are_read_only(overlay_store):
    setting = Path("/proc/sys/vm/swappiness")
    before = setting.read_text()
    with Sandbox.create(overlay_store) as sandbox:
        write_back = sandbox.run(f"cat {setting} > {setting}")
        core_pattern = sandbox.run("echo '|/bin/true' > /proc/sys/kernel/core_pattern")
    assert write_back.exit_code != 0 and "Read-only" in write_back.output
    assert core_pattern.exit_code != 0
    assert setting.read_text() == before


def test_no_cgroup_of_the_host_can_be_seen_or_made(overlay_store, marker):
    name = f"sprout-escape-{marker.replace('.', '-')}"
    attack = (
        f"cat /proc/self/cgroup; ls -A /sys; mkdir /sys/fs/cgroup/{name}; "
        f"mount -t cgroup2 none /tmp && mkdir /tmp/{name}; "
        f"mount -t cgroup -o memory none /tmp && mkdir /tmp/{name}"
    )
    with Sandbox.create(overlay_store) as sandbox:
        observation = sandbox.run(attack, timeout=30)
    lines = observation.output.splitlines()
    cgroup_lines = [line for line in lines if line.count(":") >= 2 and line[0].isdigit()]
    assert cgroup_lines and all(line.endswith(":/") for line in cgroup_lines), lines
    made = [
        os.path.join(directory, name)
        for directory, _dirs, _files in os.walk("/sys/fs/cgroup")
        if os.path.exists(os.path.join(directory, name))
    ]
    assert made == []


def test_sysfs_is_absent_and_proc_is_masked(overlay_store):
    with Sandbox.create(overlay_store) as sandbox:
        sys_entries = sandbox.run("ls -A /sys | wc -l").output.strip()
        masked = sandbox.run(
            "for f in /proc/kcore /proc/keys /proc/timer_list /proc/sched_debug; do "
            "[ -e $f ] && wc -c < $f; done; ls -A /proc/acpi | wc -l"
        ).output.split()
        devices = sandbox.run("ls /dev/mem /dev/kmem /dev/port /dev/sda 2>&1").output
    assert sys_entries == "0"
    assert all(size == "0" for size in masked), masked
    assert devices.count("No such file") == 4


def test_hidden_tests_and_host_homes_are_invisible(overlay_store, tmp_path, marker):
    hidden = {
        "tests/test_secret.py": f"SECRET = '{marker}'\n",
        "solution/solve.sh": f"echo {marker}\n",
    }
    task = write_files(tmp_path / "task", hidden)
    store = LayerStore(tmp_path / "run" / "layers", hide=[task])
    with Sandbox.create(store) as sandbox:
        reads = sandbox.run(
            f"cat {task}/tests/test_secret.py {task}/solution/solve.sh; "
            f"grep -rs {marker} /tmp /root /home /work /srv /var/tmp; ls -A /tmp /root /home"
        )
        mountinfo = sandbox.run("cat /proc/self/mountinfo").output
    assert marker not in reads.output
    assert reads.output.count("No such file or directory") == 2
    for path in (tmp_path, store.path, task, Path.cwd()):
        assert str(path) not in mountinfo, f"{path} is named in /proc/self/mountinfo"


def test_a_task_folder_among_the_shown_system_folders_is_hidden_when_named(tmp_path, marker):
    require_host_image()
    shown = Path("/opt") / f"sprout-escape-{marker.replace('.', '-')}"
    shown.mkdir()
    try:
        (shown / "secret").write_text(marker)
        plain = LayerStore(tmp_path / "plain")
        named = LayerStore(tmp_path / "named", hide=[shown])
        with Sandbox.create(plain) as sandbox:
            assert sandbox.run(f"cat {shown}/secret").output == marker, "/opt shows"
        with Sandbox.create(named) as sandbox:
            assert marker not in sandbox.run(f"cat {shown}/secret").output
    finally:
        shutil.rmtree(shown)


def test_passwords_and_private_keys_of_the_host_are_not_shown(overlay_store):
    with Sandbox.create(overlay_store) as sandbox:
        shadow = sandbox.run("cat /etc/shadow").output
        private = sandbox.run("find /etc -type f ! -perm -o=r 2>/dev/null").output.split()
    hashes = [line.split(":")[1] for line in shadow.splitlines() if line.count(":") >= 2]
    assert hashes and all(h in ("*", "!", "!*", "") for h in hashes), hashes
    # what others may not read is the password files and their backups, nothing else
    assert set(private) <= {"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-"}, private


def test_the_helper_and_init_cannot_be_traced_or_read(overlay_store):
    with Sandbox.create(overlay_store) as sandbox:
        observation = sandbox.run(
            "ls -l /proc/1/exe; cat /proc/1/environ; ls /proc/1/root/; "
            "echo x > /proc/1/root/tmp/canary; ps -e -o pid= | wc -l"
        )
    assert observation.output.count("Permission denied") == 4, observation.output
    assert observation.output.split()[-1] in {"3", "4", "5"}, "processes outside are visible"


def test_root_inside_is_an_unprivileged_id_outside(overlay_store):
    ids = overlay_store.ids
    assert ids is not None and ids.base >= 65536 and ids.count == 65536
    with Sandbox.create(overlay_store) as sandbox:
        status = sandbox.run("cat /proc/self/uid_map /proc/self/status").output
        sandbox.run("echo hi > /workspace/mine && chown 42:42 /workspace/mine")
        upper = Path(overlay_store.diff_dir(sandbox.upper))
        assert os.stat(upper / "workspace/mine").st_uid == ids.base + 42
        assert sandbox.run("stat -c %u:%g /workspace/mine /etc/passwd").output == "42:42\n0:0\n"
    assert f"0 {ids.base} {ids.count}" in " ".join(status.split())
    assert "NoNewPrivs:\t1" in status and "Seccomp:\t2" in status
    assert "CapEff:\t00000000a80425fb" in status, "not a container engine's default set"
    assert "CapInh:\t0000000000000000" in status and "CapAmb:\t0000000000000000" in status


FDS = "ls -l /proc/$$/fd"
"""The shell's descriptors, listed by a child (a glob of its own would open one)."""


def _descriptors(listing: str) -> dict[str, str]:
    links = (re.search(r" (\d+) -> (.*)$", line) for line in listing.splitlines())
    return {link[1]: link[2] for link in links if link}


def test_a_call_holds_no_file_descriptor_of_the_host(overlay_store, tmp_path):
    """The runc CVE-2024-21626 class: a descriptor of the host (a directory, the store, the
    network namespace sprout holds) inherited by a call is a way out. The shell holds only
    its standard streams and its script (bash's copy of it at 255 too), and so does a
    process it starts, as root and as another user."""
    held = (tmp_path / "held").open("w")  # a descriptor of this process, not inheritable
    with Sandbox.create(overlay_store) as sandbox:
        shell = sandbox.run(FDS).output
        child = sandbox.run(f"bash -c '{FDS}; true' </dev/null 2>/dev/null").output
        nobody = sandbox.run(
            f"setpriv --reuid 65534 --regid 65534 --clear-groups sh -c '{FDS}; true'"
        )
    held.close()
    fds = _descriptors(shell)
    assert set(fds) <= {"0", "1", "2", "3", "255"} and "3" in fds, shell
    assert all(fds[fd].startswith("/memfd:") for fd in ("3", "255") if fd in fds), shell
    assert all(not target.startswith("/") or target.startswith(("/dev/", "/memfd:"))
               for target in fds.values()), shell  # fmt: skip
    assert set(_descriptors(child)) <= {"0", "1", "2", "3", "255"}, child
    assert nobody.exit_code == 0, nobody.output
    assert set(_descriptors(nobody.output)) <= {"0", "1", "2", "3", "255"}, nobody.output


def test_planted_links_never_lead_host_side_readers_out(overlay_store, tmp_path, marker):
    secret = tmp_path / "secret"
    secret.write_text(marker)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with Sandbox.create(overlay_store) as sandbox:
        planted = sandbox.run(
            f"mkdir -p /logs/verifier && ln -s {secret} /logs/verifier/reward.txt && "
            f"ln -s {fifo} /workspace/fifo-link && mkfifo /workspace/fifo && "
            "ln -s ../../etc/hostname /workspace/relative && "
            "ln -s /workspace/loop1 /workspace/loop2 && ln -s /workspace/loop2 /workspace/loop1"
        )
        assert planted.exit_code == 0, planted.output
        assert sandbox.read("/logs/verifier/reward.txt") is None
        assert sandbox.read("/workspace/fifo-link") is None
        assert sandbox.read("/workspace/fifo") is None
        assert sandbox.read("/workspace/loop1") is None
        assert (
            sandbox.read("/workspace/relative") == sandbox.run("cat /etc/hostname").output.encode()
        )
        checkpoint = sandbox.checkpoint()
    assert overlay_store.read(checkpoint, "/logs/verifier/reward.txt") is None


def test_a_put_through_a_planted_link_stays_inside(overlay_store, tmp_path, marker):
    outside = tmp_path / "outside"
    outside.mkdir()
    source = tmp_path / "payload"
    source.write_text(marker)
    with Sandbox.create(overlay_store) as sandbox:
        sandbox.run(f"ln -s {outside} /workspace/dest && ln -s /etc /workspace/etc-link")
        sandbox.put(source, "/workspace/dest/file")
        sandbox.put(source, "/workspace/etc-link/sprout-probe")
        assert sandbox.run("cat /workspace/dest/file").output == marker
        assert sandbox.run("cat /etc/sprout-probe").output == marker
    assert list(outside.iterdir()) == []
    assert not Path("/etc/sprout-probe").exists()


def test_user_namespaces_asked_for_stay_inside_the_jail(overlay_store, marker):
    nested = (
        "unshare --user --map-root-user --mount sh -c '"
        f"mount -t tmpfs none /tmp && echo {marker} > /tmp/x && cat /tmp/x; "
        "umount /proc/sys && echo unmounted; mount -o remount,rw /proc/sys && echo remounted; "
        "echo 1 > /proc/sys/vm/swappiness && echo written'"
    )
    with Sandbox.create(overlay_store) as refused:
        assert refused.run(nested).output.startswith("unshare: unshare failed")
    with Sandbox.create(overlay_store, user_namespaces=True) as sandbox:
        observation = sandbox.run(nested)
        checkpoint = sandbox.checkpoint(always=True)
    assert observation.output.splitlines()[0] == marker, observation.output
    assert not {"unmounted", "remounted", "written"} & set(observation.output.splitlines())
    with Sandbox.fork(overlay_store, checkpoint) as fork:
        assert fork.run(nested).output.splitlines()[0] == marker, "forks inherit the choice"


ROOTLESS_PROBE = r"""
import json, sys
from sprout.sandbox import LayerStore, Sandbox
image, path, files = sys.argv[1:4]
store = LayerStore(path)
with Sandbox.create(store, image=image, files=files) as sandbox:
    probe = sandbox.run("./probe /tmp/disk 8 0", timeout=60)
    status = sandbox.run("cat /proc/self/status /proc/self/mountinfo").output
print(json.dumps({"probe": [probe.output, probe.exit_code], "status": status}))
"""


def test_every_escape_call_is_refused_rootless(nobody_env, nobody_dir, own_image, files_with_probe):
    files = nobody_dir / "files"
    shutil.copytree(files_with_probe, files)
    subprocess.run(["chown", "-R", "nobody", str(files)], check=True)
    out = json.loads(
        run_script(
            ROOTLESS_PROBE, [str(own_image), str(nobody_dir / "store"), str(files)], nobody_env
        )
    )
    output, code = out["probe"]
    assert code == 0, output
    assert_all_refused(parse_probe(output))
    assert "NoNewPrivs:\t1" in out["status"] and "Seccomp:\t2" in out["status"]
    assert str(nobody_dir) not in out["status"], "mountinfo names the store"


MSEAL = 462
"""mseal(2) on x86-64 (Linux 6.10), newer than the syscall table of Debian 12's libseccomp."""
SYSCALL_ERRNO = (
    "import ctypes, os, sys; libc = ctypes.CDLL(None, use_errno=True); "
    "r = libc.syscall(*map(int, sys.argv[1:])); print(0 if r >= 0 else ctypes.get_errno())"
)


def test_a_syscall_the_filter_does_not_name_answers_enosys(overlay_store):
    """The seccomp filter is an allow-list (Docker's semantics): a syscall added to the
    kernel after it was written is refused with ENOSYS, so libc takes its fallback, while
    the kernel outside serves it."""
    if platform.machine() != "x86_64":
        pytest.skip("the syscall number is x86-64's")
    outside = subprocess.run(
        [sys.executable, "-c", SYSCALL_ERRNO, str(MSEAL), "0", "0", "0"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if outside == str(errno.ENOSYS):
        pytest.skip("this kernel has no mseal(2)")
    with Sandbox.create(overlay_store) as sandbox:
        inside = sandbox.run(f'python3 -c "{SYSCALL_ERRNO}" {MSEAL} 0 0 0').output.strip()
        getpid = sandbox.run(f'python3 -c "{SYSCALL_ERRNO}" 39').output.strip()
    assert inside == str(errno.ENOSYS), f"mseal inside gave errno {inside}"
    assert getpid == "0", "a syscall the filter names still works"


X32_SYSCALL_BIT = 0x40000000


def test_a_call_of_the_x32_abi_answers_enosys_and_kills_nothing(overlay_store):
    """The filter lists the i386 ABI beside x86-64's but not x32's: its calls answer ENOSYS
    (the filter's action for an ABI it does not list), as on a kernel without x32. The
    shell after it goes on, and so does the process that made it."""
    if platform.machine() != "x86_64":
        pytest.skip("the x32 ABI is x86-64's")
    getpid_x32 = X32_SYSCALL_BIT | 39
    with Sandbox.create(overlay_store) as sandbox:
        done = sandbox.run(f'python3 -c "{SYSCALL_ERRNO}" {getpid_x32}; echo after $?')
    assert done.output.split() == [str(errno.ENOSYS), "after", "0"], done.output
