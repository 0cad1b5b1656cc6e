"""What isolation this machine gives a sandbox, measure by measure (`sprout doctor`).

Each measure says what the machine gives and, when it is missing, what a
hostile command could then do. As root the report ends with a call run in the
jail that reads the measures back from inside (its uid map, capabilities,
no_new_privs, seccomp mode and cgroup), so the report is what the kernel did,
not what the code meant to ask for.

A sandbox "holds" when every required measure is in place; a run refuses to
start on a machine where it does not, unless told `--isolation none`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass

from sprout.sandbox.errors import SandboxError
from sprout.sandbox.jail import cgroups
from sprout.sandbox.jail.helper import helper_build
from sprout.sandbox.jail.idmap import IdRange, check_unclaimed, configured_range
from sprout.sandbox.jail.modes import StoreMode, current_user_mode, overlay_unavailable_reason
from sprout.sandbox.layers.store import LayerStore
from sprout.sandbox.network.namespace import STACK, missing_tools
from sprout.sandbox.sandbox import Sandbox
from sprout.sandbox.storefs.btrfs import home_of

DEFAULT_CAPABILITIES = "00000000a80425fb"
"""CapEff of a container engine's default set (Docker's 14 capabilities)."""


@dataclass(frozen=True)
class Measure:
    """One part of the jail on this machine."""

    name: str
    ok: bool
    detail: str
    """What the machine gives (or why it cannot)."""
    consequence: str = ""
    """What a hostile command could do while it is missing."""
    required: bool = True
    """False: a gap that is reported but does not stop a run (the disk cap)."""


@dataclass(frozen=True)
class IsolationReport:
    """Every measure for one kind of store (root, rootless or the copy backend)."""

    mode: StoreMode
    measures: tuple[Measure, ...]

    @property
    def holds(self) -> bool:
        return all(m.ok for m in self.measures if m.required)

    @property
    def missing(self) -> list[str]:
        return [m.name for m in self.measures if m.required and not m.ok]

    @property
    def warnings(self) -> list[str]:
        return [m.name for m in self.measures if not m.required and not m.ok]

    def to_json(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "holds": self.holds,
            "missing": self.missing,
            "warnings": self.warnings,
            "measures": [asdict(m) for m in self.measures],
        }


COPY_BACKEND = Measure(
    "copy backend",
    False,
    "commands run as ordinary processes of this user, in a copy of the workdir",
    "a command can read and write everything this user can",
)
"""The copy backend's one measure: it isolates nothing, and says so."""
PROC_AND_SYS = Measure(
    "/proc and /sys", True, "runc's masked and read-only /proc paths; no sysfs; a minimal /dev"
)
"""What every overlay sandbox mounts, whatever the machine gives."""


def _overlayfs() -> Measure:
    """Whether the kernel mounts overlayfs here: without it, no sandbox starts at all."""
    unavailable = overlay_unavailable_reason()
    return Measure(
        "overlayfs",
        unavailable is None,
        unavailable or "every turn a copy-on-write layer",
        "" if unavailable is None else "no sandbox can start",
    )


def _capabilities(mode: StoreMode) -> Measure:
    """A container engine's capabilities, over namespaces that host root owns (root) or
    the sandbox's own (rootless, where they are dropped)."""
    return Measure(
        "capabilities",
        True,
        "a container engine's default set, no_new_privs; "
        + (
            "mount, UTS, IPC, PID and network namespaces belong to host root"
            if mode == "root"
            else "capabilities over the sandbox's own namespaces are dropped"
        ),
    )


def _host_files(mode: StoreMode) -> Measure:
    """What of the host a sandbox can see: the `host` image's allow-list needs root."""
    return Measure(
        "host files",
        True,
        "the host image shows system folders only, read-only, without secrets; never "
        "the store, its run, task folders, /root, /home, /tmp or /work"
        if mode == "root"
        else "a root-filesystem folder only (the host image needs root)",
    )


def _user_namespaces(mode: StoreMode, ids: IdRange) -> Measure:
    """Whether sandboxes of `mode` get a user namespace: as root, over `ids` (the configured
    range), which no user's subordinate ids may overlap."""
    name = "user namespace"
    if mode == "root":
        try:
            check_unclaimed(ids)
        except SandboxError as error:
            return Measure(name, False, str(error), "no sandbox can start")
        return Measure(
            name,
            True,
            f"root inside is host uid {ids.base}; ids 0-{ids.count - 1} map to "
            f"{ids.base}-{ids.base + ids.count - 1} (SPROUT_ID_RANGE)",
        )
    if shutil.which("unshare") is None:
        return Measure(name, False, "util-linux's unshare is missing: cannot check", "unknown")
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "true"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        return Measure(
            name,
            False,
            f"unprivileged user namespaces are refused: {probe.stderr.strip()}",
            "no sandbox can start (the overlay backend needs one)",
        )
    return Measure(
        name,
        True,
        "your uid is root inside; other ids read as nobody (apt-get cannot switch to _apt)",
    )


def _seccomp() -> Measure:
    try:
        build = helper_build()
    except SandboxError as error:
        return Measure("seccomp", False, str(error), "no sandbox can start")
    if build.seccomp:
        return Measure(
            "seccomp",
            True,
            "an allow-list of the syscalls libseccomp knows (others answer ENOSYS); mount, "
            "bpf, keyrings, modules, io_uring, new namespaces ... answer EPERM",
        )
    return Measure(
        "seccomp",
        False,
        build.note,
        "a command reaches kernel code that containers keep out (bpf, keyrings, io_uring, "
        "user namespaces of its own)",
    )


def _cgroups() -> Measure:
    found = cgroups.support()
    ok = not found.missing
    consequence = (
        ""
        if ok
        else f"no limit on {', '.join(found.missing)}: a fork bomb or a memory hog can "
        "starve the machine"
    )
    return Measure("cgroups", ok, found.describe(), consequence)


def _disk_cap(store_path: str | None) -> Measure:
    support = home_of(store_path or os.getcwd()).disk_cap
    return Measure(
        "disk cap",
        support.enforced,
        support.detail,
        "" if support.enforced else "a sandbox can fill the store's disk",
        required=False,
    )


def _network(mode: StoreMode) -> Measure:
    """Each sandbox's own network namespace, and the stack `public` needs."""
    name = "network"
    owner = "host root's" if mode == "root" else "a user namespace sprout holds outside it"
    missing = missing_tools("public")
    if missing:
        return Measure(
            name,
            False,
            f"{', '.join(missing)} missing (apt-get install {' '.join(missing)})",
            "no sandbox with network can start",
        )
    return Measure(
        name,
        True,
        f"a namespace per sandbox, owned by {owner}; none: loopback only; public: {STACK} "
        "(no gateway to this machine, no forwarded port) under a firewall root inside cannot "
        "change: no loopback, private, link-local or metadata address, none of this "
        "machine's, no IPv6; DNS through this machine's resolver; allowlist: public to the "
        "listed hosts alone, by the addresses sprout's own resolver answered for their names "
        "(every other name refused)",
    )


def _live_call() -> Measure:
    """Run one call in the jail (as root, over the host image) and read the measures back."""
    name = "a call in the jail"
    with tempfile.TemporaryDirectory(prefix="sprout-doctor-") as scratch:
        store = LayerStore(os.path.join(scratch, "store"), place=False)  # gone at once
        network = not missing_tools("public")
        try:
            with Sandbox.create(store, network=network) as sandbox:
                status, _, devices = sandbox.run(
                    "cat /proc/self/uid_map /proc/self/status /proc/self/cgroup; echo @net; "
                    "cat /proc/net/dev",
                    timeout=30,
                ).output.partition("@net\n")
        except SandboxError as error:
            return Measure(name, False, str(error), "no sandbox can start")
    interfaces = sorted(line.split(":")[0].strip() for line in devices.splitlines()[2:])
    fields = dict(
        line.split(":", 1) for line in status.splitlines() if ":" in line and "\t" in line
    )
    read = {key: fields.get(key, "?").strip() for key in ("CapEff", "NoNewPrivs", "Seccomp")}
    uid_map = status.split("\n", 1)[0].split()
    problems = []
    if uid_map[:1] != ["0"] or uid_map[1:2] == ["0"]:
        problems.append(f"uid map {' '.join(uid_map)}")
    if read["CapEff"] != DEFAULT_CAPABILITIES:
        problems.append(f"CapEff {read['CapEff']}")
    if read["NoNewPrivs"] != "1":
        problems.append("no_new_privs off")
    if helper_build().seccomp and read["Seccomp"] != "2":
        problems.append(f"seccomp mode {read['Seccomp']}")
    if interfaces != (["lo", "tap0"] if network else ["lo"]):
        problems.append(f"interfaces {', '.join(interfaces)}")
    detail = (
        f"uid map '{' '.join(uid_map)}', CapEff {read['CapEff']}, NoNewPrivs "
        f"{read['NoNewPrivs']}, Seccomp {read['Seccomp']}, interfaces {', '.join(interfaces)}"
    )
    if problems:
        return Measure(name, False, f"{detail}: wrong: {', '.join(problems)}", "see above")
    return Measure(name, True, detail)


def probe_isolation(
    mode: StoreMode | None = None, store_path: str | None = None
) -> IsolationReport:
    """The report for stores of `mode` (default: what this process would get) whose layers
    live (or will: a new store's place, see `storefs.btrfs.home_of`) at `store_path` (default:
    a new store in the current directory), for the disk cap."""
    mode = mode or current_user_mode()
    ids = configured_range()  # a malformed SPROUT_ID_RANGE is bad input, in any mode
    if mode == "copy":
        return IsolationReport(mode, (COPY_BACKEND,))
    overlay = _overlayfs()
    if not overlay.ok:  # nothing else can be checked, nor matters
        return IsolationReport(mode, (overlay,))
    measures = [
        overlay,
        _user_namespaces(mode, ids),
        _capabilities(mode),
        _seccomp(),
        PROC_AND_SYS,
        _cgroups(),
        _host_files(mode),
        _disk_cap(store_path),
        _network(mode),
    ]
    if mode == "root" and os.geteuid() == 0:
        measures.append(_live_call())
    return IsolationReport(mode, tuple(measures))
