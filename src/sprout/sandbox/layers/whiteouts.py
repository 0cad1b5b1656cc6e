"""How a layer directory marks deletions, and the overlay semantics read from it.

A layer is a directory tree in overlayfs "upper" form: files and directories a
turn wrote, plus markers for what it deleted (whiteouts) and for directories
it replaced whole (opaque directories). Two encodings exist:

- ``OverlayFormat``: the kernel's own (a 0/0 character device; an ``opaque``
  xattr in the ``trusted.`` namespace as root, ``user.`` when rootless), so
  that overlayfs can mount the layers directly.
- ``MarkerFormat``: plain files (``.wh.NAME``, ``.wh..wh..opq``), for the copy
  backend, which needs no privilege and no kernel support.

Everything that reads layers (lookups, change lists, squashing, materialising)
goes through one ``LayerFormat`` so that both backends share one code path.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from sprout.sandbox.storefs.files import copy_dir_attributes, place_file, remove_entry

EntryKind = Literal["whiteout", "dir", "opaque", "other"]


@dataclass(frozen=True)
class Entry:
    """One name in one layer directory, classified by the layer's encoding."""

    name: str
    kind: EntryKind
    path: str
    """Where the entry (or, for a marker whiteout, the marker file) lives on disk."""


class LayerFormat(Protocol):
    """The deletion encoding of a layer directory."""

    def entries(self, directory: str) -> Iterator[Entry]:
        """The names a layer directory holds, markers resolved."""
        ...

    def entry(self, path: str) -> EntryKind | None:
        """What the layer holds at `path`, or None when it holds nothing there."""
        ...

    def write_whiteout(self, path: str) -> None:
        """Record that `path` is deleted in this layer."""
        ...

    def write_opaque(self, directory: str) -> None:
        """Record that `directory` hides whatever lower layers hold under it."""
        ...


class OverlayFormat:
    """The overlayfs encoding, readable by the kernel."""

    def __init__(self, xattr_namespace: Literal["trusted", "user"]) -> None:
        self.opaque_xattr = f"{xattr_namespace}.overlay.opaque"

    def _kind(self, path: str, st: os.stat_result) -> EntryKind:
        if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
            return "whiteout"
        if stat.S_ISDIR(st.st_mode):
            return "opaque" if self._is_opaque(path) else "dir"
        return "other"

    def _is_opaque(self, directory: str) -> bool:
        try:
            return os.getxattr(directory, self.opaque_xattr, follow_symlinks=False) == b"y"
        except OSError:
            return False

    def entries(self, directory: str) -> Iterator[Entry]:
        with os.scandir(directory) as it:
            for item in it:
                st = item.stat(follow_symlinks=False)
                yield Entry(item.name, self._kind(item.path, st), item.path)

    def entry(self, path: str) -> EntryKind | None:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        return self._kind(path, st)

    def write_whiteout(self, path: str) -> None:
        os.mknod(path, stat.S_IFCHR | 0o000, os.makedev(0, 0))

    def write_opaque(self, directory: str) -> None:
        os.setxattr(directory, self.opaque_xattr, b"y", follow_symlinks=False)


WHITEOUT_PREFIX = ".wh."
OPAQUE_MARKER = ".wh..wh..opq"


class MarkerFormat:
    """Whiteouts and opaque directories as ordinary marker files (no privilege needed)."""

    def entries(self, directory: str) -> Iterator[Entry]:
        with os.scandir(directory) as it:
            for item in it:
                if item.name == OPAQUE_MARKER:
                    continue
                if item.name.startswith(WHITEOUT_PREFIX):
                    yield Entry(item.name[len(WHITEOUT_PREFIX) :], "whiteout", item.path)
                elif item.is_dir(follow_symlinks=False):
                    opaque = os.path.lexists(os.path.join(item.path, OPAQUE_MARKER))
                    yield Entry(item.name, "opaque" if opaque else "dir", item.path)
                else:
                    yield Entry(item.name, "other", item.path)

    def entry(self, path: str) -> EntryKind | None:
        head, name = os.path.split(path)
        if os.path.lexists(os.path.join(head, WHITEOUT_PREFIX + name)):
            return "whiteout"
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            return "other"
        return "opaque" if os.path.lexists(os.path.join(path, OPAQUE_MARKER)) else "dir"

    def write_whiteout(self, path: str) -> None:
        head, name = os.path.split(path)
        with open(os.path.join(head, WHITEOUT_PREFIX + name), "x"):
            pass

    def write_opaque(self, directory: str) -> None:
        with open(os.path.join(directory, OPAQUE_MARKER), "x"):
            pass


def lookup(stack: Sequence[str], image: str | None, rel: str, fmt: LayerFormat) -> str | None:
    """Where `rel` lives in the merged view of `stack` (top first) over `image`, or None.

    Implements overlayfs's rules: the topmost layer holding the path wins; a
    whiteout, or a non-directory or opaque directory on the way down, hides
    everything below it. No link is followed, on the host or inside: `rel`
    names an entry, and the entry may itself be a link (see `resolve`).
    """
    parts = rel.split("/")
    for root in stack:
        current = root
        for depth, part in enumerate(parts):
            current = os.path.join(current, part)
            kind = fmt.entry(current)
            if kind is None:
                break
            if kind == "whiteout":
                return None
            if depth == len(parts) - 1:
                return current
            if kind == "other":
                return None
            if kind == "opaque" and fmt.entry(os.path.join(current, *parts[depth + 1 :])) is None:
                return None
    if image is None:
        return None
    current = image
    for depth, part in enumerate(parts):
        current = os.path.join(current, part)
        try:
            st = os.lstat(current)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if depth < len(parts) - 1 and not stat.S_ISDIR(st.st_mode):
            return None
    return current


MAX_LINKS = 40
"""Links followed while resolving one path, as the kernel's ELOOP limit."""


@dataclass(frozen=True)
class Resolved:
    """A path inside a sandbox with every link in it followed inside the sandbox's view."""

    parts: tuple[str, ...]
    """The path's components after following links; empty for the root."""
    found: str | None
    """Where the final entry lives on disk, or None when the view holds nothing there."""
    missing: int = 0
    """How many trailing components of `parts` do not exist (only with `allow_missing`)."""


def resolve(
    stack: Sequence[str],
    image: str | None,
    path: str,
    fmt: LayerFormat,
    *,
    allow_missing: bool = False,
) -> Resolved | None:
    """Follow `path` through the merged view as the kernel would inside the sandbox.

    An absolute link restarts at the sandbox's root, never the host's, so a
    link an agent planted cannot lead a host-side reader out of the view. None
    when a component is not a directory, links loop, or (unless
    `allow_missing`) something on the way does not exist.
    """
    pending = [p for p in path.split("/") if p not in ("", ".")]
    parts: list[str] = []
    links = 0
    missing = 0
    while pending:
        part = pending.pop(0)
        if part == "..":
            if parts and not missing:
                parts.pop()
            elif missing:
                return None
            continue
        parts.append(part)
        if missing:
            missing += 1
            continue
        found = lookup(stack, image, "/".join(parts), fmt)
        if found is None:
            if not allow_missing:
                return None
            missing = 1
            continue
        st = os.lstat(found)
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > MAX_LINKS:
                return None
            target = os.readlink(found)
            parts.pop()
            if target.startswith("/"):
                parts = []
            pending = [p for p in target.split("/") if p not in ("", ".")] + pending
            continue
        if pending and not stat.S_ISDIR(st.st_mode):
            return None
    if missing or not parts:
        return Resolved(tuple(parts), None, missing)
    return Resolved(tuple(parts), lookup(stack, image, "/".join(parts), fmt))


def read_regular_file(path: str) -> bytes | None:
    """The bytes of `path` when it is a regular file; never follows a link or opens a fifo
    or device (which an agent could plant to hang or harm the host-side reader)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def names_below(stack: Sequence[str], image: str | None, rel: str, fmt: LayerFormat) -> set[str]:
    """Candidate names inside directory `rel` across `stack` and `image` (a superset of the
    merged listing; callers resolve each name with `lookup`)."""
    names: set[str] = set()
    for root in stack:
        directory = os.path.join(root, rel)
        if fmt.entry(directory) in ("dir", "opaque"):
            names.update(item.name for item in fmt.entries(directory))
    if image is not None and os.path.isdir(os.path.join(image, rel)):
        names.update(os.listdir(os.path.join(image, rel)))
    return names


def walk(root: str, fmt: LayerFormat, rel: str = "") -> Iterator[tuple[str, Entry]]:
    """Every entry of a layer, parents before children, with its path relative to the layer."""
    for item in fmt.entries(os.path.join(root, rel) if rel else root):
        item_rel = f"{rel}/{item.name}" if rel else item.name
        yield item_rel, item
        if item.kind in ("dir", "opaque"):
            yield from walk(root, fmt, item_rel)


def is_empty(root: str) -> bool:
    """True when a layer recorded no change at all (an empty turn)."""
    with os.scandir(root) as it:
        return next(it, None) is None


def merge(
    layers: Sequence[str],
    target: str,
    fmt: LayerFormat,
    *,
    keep_markers: bool,
    link_files: bool,
    image: str | None = None,
) -> None:
    """Apply `layers` (top first) onto `target`, bottom layer first.

    `keep_markers` keeps deletions in `target` as whiteouts where `image` still
    holds the path, and opaque markers (squashing: the result is itself a layer
    over `image`); a whiteout over nothing is dropped, since the kernel would
    list it as an entry of a directory no other layer holds. Without
    `keep_markers` deletions are applied and forgotten (materialising a
    working tree). `link_files` hard-links files instead of copying them, which
    is safe only when nothing will ever write to `target` in place (sealed
    layers are immutable).
    """
    for layer in reversed(layers):
        for rel, item in walk(layer, fmt):
            destination = os.path.join(target, rel)
            if item.kind == "whiteout":
                remove_entry(destination)
                if keep_markers and image is not None and os.path.lexists(os.path.join(image, rel)):
                    fmt.write_whiteout(destination)
            elif item.kind in ("dir", "opaque"):
                replace = item.kind == "opaque" or not (
                    os.path.isdir(destination) and not os.path.islink(destination)
                )
                if replace:
                    remove_entry(destination)
                    os.mkdir(destination)
                    if keep_markers and item.kind == "opaque":
                        fmt.write_opaque(destination)
                copy_dir_attributes(item.path, destination)
            else:
                remove_entry(destination)
                place_file(item.path, destination, link_files)
