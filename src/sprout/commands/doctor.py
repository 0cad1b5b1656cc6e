"""`sprout doctor`: what isolation this machine gives sandboxes, and what is missing."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from typing import Any

from sprout.images.cache import ImageCache
from sprout.sandbox import (
    IsolationReport,
    Placement,
    home_of,
    move_command,
    probe_isolation,
    system_tool,
)


def add_parser(commands: Any) -> None:
    doctor = commands.add_parser(
        "doctor",
        help="what isolation this machine gives sandboxes; exit 1 when it cannot hold",
        description="Check each measure of the sandbox's jail on this machine (user "
        "namespaces and the id range, capabilities, seccomp, /proc masking, cgroups, the "
        "host image's view, the disk cap of the store's filesystem, the network stack and "
        "what each network policy guarantees) and, as root, run one "
        "call in the jail and read them back from inside; then whether the store's "
        "filesystem clones extents, and where sprout keeps layers (and new images) when it does "
        "not, with the line that moves an image cache left on the plain disk. Exit 0 "
        "when the sandbox holds, 1 when a required measure is missing (then `sprout run` "
        "refuses to start unless given --isolation none).",
    )
    doctor.add_argument(
        "--store",
        metavar="DIR",
        help="a layer store, a run folder (its layers/) or where a new store would be made, for "
        "the disk cap and the clone probe of the filesystem that holds (or will hold) its "
        "layers (default: a new store in the current directory)",
    )
    doctor.add_argument("--json", action="store_true", help="the report as JSON")
    doctor.set_defaults(func=cmd_doctor)


def report_lines(report: IsolationReport, store: Sequence[str] = ()) -> list[str]:
    """The report as the terminal shows it: one line per measure, the `store` lines, then
    the verdict."""
    width = max(len(m.name) for m in report.measures)
    lines = [
        f"sandboxes here: {report.mode} ({'copy backend' if report.mode == 'copy' else 'overlay'})"
    ]
    for measure in report.measures:
        status = "ok" if measure.ok else ("MISSING" if measure.required else "warning")
        lines.append(f"  {status:<8} {measure.name:<{width}}  {measure.detail}")
        if measure.consequence and not measure.ok:
            lines.append(f"  {'':<8} {'':<{width}}  -> {measure.consequence}")
    lines.extend(store)
    if report.holds:
        extra = f" ({len(report.warnings)} warning)" if report.warnings else ""
        lines.append(f"the sandbox holds{extra}")
    else:
        lines.append(
            f"the sandbox cannot hold: missing {', '.join(report.missing)}; `sprout run` "
            "refuses to start unless given --isolation none"
        )
    return lines


def placement_lines(placement: Placement) -> list[str]:
    """Whether the store's filesystem clones extents and, where not, what that costs."""
    lines = [f"store filesystem: {placement.clone.detail}"]
    if placement.note:
        lines.append(f"  -> {placement.note}")
    return lines


def image_cache_lines(images: str, move: str | None) -> list[str]:
    """Where the image cache at `images` stays on the plain disk though a new one would be
    on the store filesystem: what that costs, and the line that moves it."""
    if move is None:
        return []
    return [
        f"image cache: {images} stays on the plain disk (sprout does not move it): a write "
        "to a big file of an image copies the whole file up",
        "  -> to move it onto the store filesystem once a run as root has mounted that, "
        "with no sprout running:",
        f"  $ {move}",
    ]


def registry_lines(skopeo: str | None, images: str) -> list[str]:
    """Whether tasks get their exact images: pulls need skopeo, else only approximations."""
    if skopeo is None:
        return [
            "image pulls: skopeo is missing (Debian package skopeo): a task's image comes from "
            "the image cache, else from a Debian approximation"
        ]
    return [f"image pulls: {skopeo}, each layer kept once per machine in {images}/blobs"]


def store_path(given: str | None) -> str:
    """Where the layers that `--store` means live: a run folder's are in its layers/."""
    path = given or os.getcwd()
    if os.path.isfile(os.path.join(path, "sprout.db")):
        return os.path.join(path, "layers")
    return path


def cmd_doctor(args: argparse.Namespace) -> int:
    path = store_path(args.store)
    placement = home_of(path).placement  # first: a malformed SPROUT_STORE_* is bad input
    report = probe_isolation(store_path=path)
    images = str(ImageCache().root)
    move = move_command(images)
    skopeo = system_tool("skopeo")
    if args.json:
        found = report.to_json()
        found["store_filesystem"] = {
            "clones": placement.clone.clones,
            "detail": placement.clone.detail,
            "own_filesystem": placement.own_fs,
            "note": placement.note,
        }
        found["image_cache"] = {"path": images, "move_command": move, "skopeo": skopeo}
        print(json.dumps(found, indent=2))
    else:
        store = placement_lines(placement) + image_cache_lines(images, move)
        store += registry_lines(skopeo, images)
        print("\n".join(report_lines(report, store)))
    return 0 if report.holds else 1
