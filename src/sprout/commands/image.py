"""`sprout image`: build, import, list and remove the machine's images."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from sprout.commands.common import UsageError


def add_parser(commands: Any) -> None:
    image = commands.add_parser(
        "image",
        help="root filesystems for sandboxes: pull, build from Debian, import, list, rm",
        description="The machine's image cache (SPROUT_CACHE/images, default "
        "~/.cache/sprout/images), shared by every run: images pulled from registries, built from "
        "Debian's archive with mmdebstrap, or imported from an OCI layout or a `docker save` "
        "tarball.",
    )
    verbs = image.add_subparsers(dest="image_command", required=True, metavar="COMMAND")
    build = verbs.add_parser(
        "build",
        help="build NAME from Debian's archive (mmdebstrap)",
        description="Build image NAME with mmdebstrap. Names sprout knows (python:3.11-slim, "
        "python:3.13-slim, debian:bookworm, debian:trixie, ubuntu:24.04 ...) need no options; "
        "any other name needs --suite.",
    )
    build.add_argument("image", metavar="NAME")
    build.add_argument("--suite", help="Debian suite: bookworm or trixie")
    build.add_argument("--packages", metavar="LIST", help="comma-separated packages to add")
    build.add_argument("--mirror", metavar="URL", help="Debian mirror (default deb.debian.org)")
    build.set_defaults(func=cmd_build)
    imported = verbs.add_parser(
        "import",
        help="import an OCI layout or a docker save tarball",
        description="Import FILE (an OCI image layout folder or tar, or `docker save -o FILE "
        "IMAGE`), applying its layers with their whiteouts.",
    )
    imported.add_argument("file", metavar="FILE")
    imported.add_argument(
        "--name", dest="as_name", help="the name to give it (default: its own tag)"
    )
    imported.add_argument("--ref", help="which image of a file that holds several (its tag)")
    imported.set_defaults(func=cmd_import)
    pulled = verbs.add_parser(
        "pull",
        help="pull REF from its registry (skopeo)",
        description="Pull image REF (ubuntu:24.04, alexgshaw/x:tag, ghcr.io/o/x@sha256:..., "
        "host:port/x:tag) with skopeo into the image cache, its layers into the machine's "
        "one blob cache. Credentials, mirrors and insecure registries come from where "
        "Podman and Docker keep them (REGISTRY_AUTH_FILE, containers-auth.json, "
        "~/.docker/config.json, registries.conf, /etc/containers/certs.d).",
    )
    pulled.add_argument("image", metavar="REF")
    pulled.add_argument(
        "--platform",
        metavar="OS/ARCH",
        help="which image of a manifest list (default: this machine's)",
    )
    pulled.set_defaults(func=cmd_pull)
    listed = verbs.add_parser("list", help="the cached images")
    listed.set_defaults(func=cmd_list)
    removed = verbs.add_parser("rm", help="forget NAME (the image goes with its last name)")
    removed.add_argument("image", metavar="NAME")
    removed.set_defaults(func=cmd_rm)
    for verb in (build, imported, pulled, listed, removed):  # errors read "sprout image rm: ..."
        verb.set_defaults(name=f"image {verb.prog.split()[-1]}")


def cmd_build(args: argparse.Namespace) -> int:
    from sprout.images import ImageCache
    from sprout.images.debian import DEFAULT_MIRROR, DebianRecipe, ensure_debian
    from sprout.images.names import normalize, resolve_from

    name = normalize(args.image)
    request = resolve_from(name)
    if request is None and args.suite is None:
        raise UsageError(f"{name}: not a name sprout knows; give --suite bookworm")
    recipe = request.recipe if request is not None else None
    packages = tuple(p.strip() for p in (args.packages or "").split(",") if p.strip())
    recipe = DebianRecipe(
        args.suite or (recipe.suite if recipe else "bookworm"),
        (recipe.packages if recipe else ()) + packages or DebianRecipe("bookworm").packages,
        mirror=args.mirror or DEFAULT_MIRROR,
        pip_anywhere=recipe.pip_anywhere if recipe else False,
    )
    if ImageCache().find(recipe.digest) is None:
        print(
            f"{name}: building it from Debian {recipe.suite}'s archive with mmdebstrap, once "
            "per machine (about a minute on 2 cores)",
            file=sys.stderr,
            flush=True,
        )
    started = time.monotonic()
    image = ensure_debian(name, recipe)
    print(f"{name}: {image.rootfs} ({image.size / 1e6:.0f} MB, {time.monotonic() - started:.0f} s)")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from sprout.images.oci import import_image

    started = time.monotonic()
    image = import_image(args.file, args.name, reference=args.ref)
    names = ", ".join(image.names)
    print(
        f"{names}: {image.rootfs} ({image.size / 1e6:.0f} MB, {time.monotonic() - started:.0f} s)"
    )
    return 0


def cmd_pull(args: argparse.Namespace) -> int:
    from sprout.images.pull import pull

    image = pull(args.image, platform=args.platform)
    print(f"{', '.join(image.names)}: {image.rootfs} ({image.size / 1e6:.0f} MB)")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from sprout.images import ImageCache

    images = ImageCache().images()
    if not images:
        print("no images (sprout image build NAME, or sprout image import FILE)")
    for image in images:
        made = time.strftime("%Y-%m-%d %H:%M", time.localtime(image.created))
        source = (
            image.source.get("suite")
            or image.source.get("file")
            or f"{image.source.get('registry', '')}@{image.source.get('digest', '')}"
        )
        print(
            f"{', '.join(image.names) or '(unnamed)'}  {image.size / 1e6:.0f} MB  {made}  "
            f"{image.source.get('kind', '?')}:{source}  {image.digest}"
        )
    return 0


def cmd_rm(args: argparse.Namespace) -> int:
    from sprout.images import ImageCache

    if not ImageCache().remove(args.image):
        raise UsageError(f"{args.image}: no such image (sprout image list)")
    return 0
