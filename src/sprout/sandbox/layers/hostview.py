"""What the `host` image shows of this machine: system directories, read-only, and no secrets.

The `host` image is this machine's root filesystem under the sandbox's layers.
Between the two sits a mask layer, built here, that decides what of the host
is visible, deny by default:

- at the top, only the system directories in `SHOWN` pass through; the usual
  homes of people's and runs' files (`/tmp`, `/root`, `/home`, `/srv` ...)
  are empty directories, and every other top-level entry (`/work`, say) is
  gone;
- in `/var`, only what package managers need (`/var/lib/dpkg`, `/var/lib/apt`,
  caches) shows; logs, mail, spools and other services' state are empty;
- in `/etc`, files that are not world-readable (ssh host keys, `sudoers`,
  `ssl/private`) are gone, and `shadow`/`gshadow` show with every password
  locked;
- the layer store, its run folder and any path the caller names are gone
  wherever they lie.

The mask is an ordinary overlayfs layer (whiteouts and opaque directories),
owned by the sandbox's ids so that it reads as the host does, and host-side
readers of layers stack it too: following a link an agent planted never
reaches what the sandbox could not see.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import stat
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from sprout.sandbox.jail.idmap import IdRange
from sprout.sandbox.layers.whiteouts import LayerFormat

SHOWN = ("bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "opt", "var")
"""Top-level directories of the host that the image shows."""
EMPTIED = ("tmp", "root", "home", "run", "srv", "mnt", "media", "boot", "proc", "dev", "sys")
"""Top-level directories that exist inside but show nothing of the host's."""
SHOWN_BELOW = {
    "var": ("lib", "cache", "local", "opt", "run", "lock"),
    "var/lib": ("dpkg", "apt", "ucf", "pam", "misc", "python", "sgml-base", "xml-core"),
    "var/cache": ("apt", "debconf", "ldconfig", "man", "fontconfig"),
}
"""Directories below the top in which only the listed names show (the rest are emptied
directories or gone files)."""
PRIVATE_CHECKED = ("etc", "var/cache/debconf")
"""Trees in which any entry that is not world-readable is hidden."""
LOCKED_PASSWORDS = {"etc/shadow": 1, "etc/shadow-": 1, "etc/gshadow": 1, "etc/gshadow-": 1}
"""Password files shown with the password field (index) of every line locked."""

MaskKind = Literal["gone", "empty", "file", "dir"]


@dataclass(frozen=True)
class MaskEntry:
    """One entry of the mask layer, at `rel` (relative to the root)."""

    rel: str
    kind: MaskKind
    mode: int = 0o755
    uid: int = 0
    gid: int = 0
    content: bytes = b""


def _locked(text: bytes, field: int) -> bytes:
    lines = []
    for line in text.split(b"\n"):
        fields = line.split(b":")
        if len(fields) > field and fields[field] not in (b"", b"*", b"!", b"!*"):
            fields[field] = b"*"
        lines.append(b":".join(fields))
    return b"\n".join(lines)


class MaskPlan:
    """The entries of one mask, collected from the host as it is now."""

    def __init__(self, host_root: str = "/") -> None:
        self.host_root = host_root
        self.entries: dict[str, MaskEntry] = {}

    def _host(self, rel: str) -> str:
        return os.path.join(self.host_root, rel)

    def _hidden_above(self, rel: str) -> bool:
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            above = self.entries.get("/".join(parts[:depth]))
            if above is not None and above.kind in ("gone", "empty", "file"):
                return True
        return False

    def _add(self, entry: MaskEntry) -> None:
        if self._hidden_above(entry.rel):
            return
        parts = entry.rel.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent not in self.entries:
                st = os.lstat(self._host(parent))
                self.entries[parent] = MaskEntry(
                    parent, "dir", stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid
                )
        self.entries[entry.rel] = entry

    def _emptied(self, rel: str, st: os.stat_result | None, mode: int = 0o755) -> MaskEntry:
        if st is not None and stat.S_ISDIR(st.st_mode):
            return MaskEntry(rel, "empty", stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
        return MaskEntry(rel, "empty", mode)

    def top_level(self) -> None:
        for name in sorted(os.listdir(self.host_root)):
            if name in SHOWN:
                continue
            if name in EMPTIED:
                self._add(self._emptied(name, os.lstat(self._host(name))))
            else:
                self._add(MaskEntry(name, "gone"))
        for name in EMPTIED:
            if name not in self.entries:
                self._add(MaskEntry(name, "empty", 0o1777 if name == "tmp" else 0o755))
        # /tmp inside is the sandbox's own scratch: world-writable whatever the host's is.
        self.entries["tmp"] = MaskEntry("tmp", "empty", 0o1777)

    def shown_below(self) -> None:
        for directory, shown in SHOWN_BELOW.items():
            if not os.path.isdir(self._host(directory)) or self._hidden_above(directory + "/x"):
                continue
            for name in sorted(os.listdir(self._host(directory))):
                if name in shown:
                    continue
                rel = f"{directory}/{name}"
                st = os.lstat(self._host(rel))
                self._add(
                    self._emptied(rel, st) if stat.S_ISDIR(st.st_mode) else MaskEntry(rel, "gone")
                )
        if os.path.isdir(self._host("var")):
            self._add(MaskEntry("var/tmp", "empty", 0o1777))

    def private_files(self) -> None:
        for tree in PRIVATE_CHECKED:
            if not os.path.isdir(self._host(tree)) or self._hidden_above(tree + "/x"):
                continue
            for directory, dirnames, filenames in os.walk(self._host(tree)):
                rel_dir = os.path.relpath(directory, self.host_root)
                for name in sorted((*dirnames, *filenames)):
                    rel = f"{rel_dir}/{name}"
                    st = os.lstat(self._host(rel))
                    if rel in LOCKED_PASSWORDS and stat.S_ISREG(st.st_mode):
                        with open(self._host(rel), "rb") as handle:
                            text = _locked(handle.read(), LOCKED_PASSWORDS[rel])
                        mode = stat.S_IMODE(st.st_mode)
                        self._add(MaskEntry(rel, "file", mode, st.st_uid, st.st_gid, text))
                    elif stat.S_ISLNK(st.st_mode) or st.st_mode & stat.S_IROTH:
                        continue
                    elif stat.S_ISDIR(st.st_mode):
                        self._add(self._emptied(rel, st))
                        dirnames.remove(name)
                    else:
                        self._add(MaskEntry(rel, "gone"))

    def hide(self, path: str) -> None:
        """Make host path `path` (a store, a run folder, a task) absent, wherever it is."""
        real = os.path.realpath(path)
        rel = os.path.relpath(real, os.path.realpath(self.host_root))
        if rel == "." or rel.startswith(".."):
            return
        if os.path.lexists(self._host(rel)):
            self._add(MaskEntry(rel, "gone"))


def plan_mask(hidden: tuple[str, ...], host_root: str = "/") -> list[MaskEntry]:
    """The mask for this machine now, hiding `hidden` paths too."""
    plan = MaskPlan(host_root)
    plan.top_level()
    plan.shown_below()
    plan.private_files()
    for path in hidden:
        plan.hide(path)
    return sorted(plan.entries.values(), key=lambda entry: entry.rel)


def _digest(entries: list[MaskEntry], ids: IdRange) -> str:
    digest = hashlib.sha256(str(ids).encode())
    for entry in entries:
        fields = [entry.rel, entry.kind, entry.mode, entry.uid, entry.gid]
        digest.update(json.dumps(fields).encode())
        digest.update(hashlib.sha256(entry.content).digest())
    return digest.hexdigest()[:16]


def write_mask(directory: str, entries: list[MaskEntry], ids: IdRange, fmt: LayerFormat) -> None:
    """Write `entries` as an overlayfs layer at `directory` (which must not exist)."""
    os.mkdir(directory, 0o755)
    os.chown(directory, ids.base, ids.base)
    for entry in entries:
        path = os.path.join(directory, entry.rel)
        if entry.kind == "gone":
            fmt.write_whiteout(path)
            continue
        if entry.kind == "file":
            with open(path, "wb") as handle:
                handle.write(entry.content)
        else:
            os.mkdir(path)
            if entry.kind == "empty":
                fmt.write_opaque(path)
        os.chown(path, ids.on_disk(entry.uid), ids.on_disk(entry.gid))
        os.chmod(path, entry.mode)


def mask_layer(root: str, hidden: tuple[str, ...], ids: IdRange, fmt: LayerFormat) -> str:
    """The mask for this machine under `root` (built once per distinct content); its path."""
    entries = plan_mask(hidden)
    target = os.path.join(root, _digest(entries, ids))
    if os.path.isdir(target):
        return target
    os.makedirs(root, exist_ok=True)
    temporary = f"{target}.{secrets.token_hex(4)}.tmp"
    write_mask(temporary, entries, ids, fmt)
    try:
        os.rename(temporary, target)
    except OSError:  # another process built the same mask first
        shutil.rmtree(temporary, ignore_errors=True)
    return target


class HostMask:
    """What the `host` image hides, for one layer store: the host paths never to show, and
    the mask layer built from them (once per process, again when a path is added)."""

    def __init__(self, root: str, hidden: tuple[str, ...], fmt: LayerFormat) -> None:
        self.root = root
        self.hidden = hidden
        self.format = fmt
        self._mask: str | None = None
        self._lock = threading.Lock()

    def hide(self, paths: Iterable[str | os.PathLike[str]]) -> None:
        """Add host paths (a task's folder, say) that the `host` image must never show."""
        with self._lock:
            added = tuple(os.fspath(p) for p in paths if os.fspath(p) not in self.hidden)
            if added:
                self.hidden = (*self.hidden, *added)
                self._mask = None

    def layer(self, ids: IdRange) -> str:
        """The mask layer for the paths hidden so far (built on first use)."""
        with self._lock:
            if self._mask is None or not os.path.isdir(self._mask):
                self._mask = mask_layer(self.root, self.hidden, ids, self.format)
            return self._mask
