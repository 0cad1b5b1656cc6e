"""Image pull benchmark: `sprout image pull` beside `skopeo copy` of the same image, a second
image that shares the first one's base, and a sandbox's first call on a pulled image.

Run it with `sprout bench images [options]`. A Debian `docker-registry` is started
on loopback (plain HTTP, marked insecure in a registries.conf of the benchmark's
own, so TLS costs are left out of both sides alike) and two images are pushed into
it: A, of three layers of random bytes (gzip cannot shrink them) with a shell at
the bottom, and B and C, A's two lower layers each under a small layer of its own.
Each repetition pulls into an empty cache:

- skopeo alone: `skopeo copy docker://A oci:DIR` into an empty blob folder, the
  transfer and digest checks and nothing else;
- sprout: `sprout.images.pull.pull(A)`, which is that same copy plus resolving the
  manifest first and unpacking every layer into a root filesystem;
- B after A in the same cache: the bytes fetched, against B's own layer, and its
  time (B unpacks the two shared layers into a chain, `sprout.images.chains`);
- C after B: its time (it links the chain) and the bytes of its root filesystem
  that are its own, not links;
- first call: a sandbox over A's root filesystem (as root: overlayfs) running `true`.

Every cache is a plain temporary folder (no store filesystem), removed at the end.
Medians and ranges over `--repeat` runs; JSON to `--out`.
"""

import argparse
import contextlib
import datetime
import gzip
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import _stats as stats
from sprout.images import ImageCache
from sprout.images.pull import pull
from sprout.sandbox import LayerStore, Sandbox


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="sprout bench images", description=__doc__)
    parser.add_argument("--repeat", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument(
        "--megabytes", type=int, default=120, help="size of image A's layers (default 120)"
    )
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat: expected at least 1, got {args.repeat}")
    if args.megabytes < 3:
        parser.error(f"--megabytes: expected at least 3, got {args.megabytes}")
    for tool in ("skopeo", "docker-registry"):
        if shutil.which(tool) is None:
            parser.error(f"{tool} is not installed (Debian package {tool})")
    return args


def _layer(files: dict[str, bytes], programs: list[str] = ()) -> tuple[bytes, str]:
    """(a gzipped layer of `files` and of `programs` with their libraries, its diff id)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for folder in ("proc", "dev", "tmp") if programs else ():  # what a sandbox mounts on
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if folder == "tmp" else 0o755
            tar.addfile(info)
        for program in programs:
            found = subprocess.run(["ldd", program], capture_output=True, text=True).stdout
            for path in [program, *re.findall(r"(/\S+) \(0x[0-9a-f]+\)", found)]:
                tar.add(os.path.realpath(path), arcname=path.lstrip("/"))
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    data = raw.getvalue()
    return gzip.compress(data, compresslevel=1, mtime=0), "sha256:" + hashlib.sha256(
        data
    ).hexdigest()


def _blob(layout: Path, data: bytes) -> dict[str, object]:
    digest = hashlib.sha256(data).hexdigest()
    (layout / "blobs/sha256").mkdir(parents=True, exist_ok=True)
    (layout / "blobs/sha256" / digest).write_bytes(data)
    return {"digest": f"sha256:{digest}", "size": len(data)}


def write_layout(layout: Path, layers: list[tuple[bytes, str]]) -> None:
    """An OCI layout of `layers` (bottom first), tagged `bench`."""
    config = {
        "architecture": {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, "amd64"),
        "os": "linux",
        "config": {"Env": ["PATH=/usr/bin:/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [diff for _, diff in layers]},
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            **_blob(layout, json.dumps(config).encode()),
        },
        "layers": [
            {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", **_blob(layout, data)}
            for data, _ in layers
        ],
    }
    described = _blob(layout, json.dumps(manifest).encode())
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": manifest["mediaType"],
                **described,
                "annotations": {"org.opencontainers.image.ref.name": "bench"},
            }
        ],
    }
    (layout / "index.json").write_text(json.dumps(index))
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')


@contextlib.contextmanager
def registry(folder: Path) -> Iterator[str]:
    """docker-registry on a free loopback port, plain HTTP; its host:port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = folder / "registry.yml"
    config.write_text(
        f"version: 0.1\nlog: {{level: error}}\nstorage: {{filesystem: {{rootdirectory: "
        f"{folder / 'storage'}}}}}\nhttp: {{addr: 127.0.0.1:{port}}}\n"
    )
    process = subprocess.Popen(
        ["docker-registry", "serve", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _skopeo(*arguments: str) -> None:
    conf = os.environ["CONTAINERS_REGISTRIES_CONF"]
    subprocess.run(
        ["skopeo", "--registries-conf", conf, *arguments], check=True, capture_output=True
    )


def _rootfs_bytes(root: Path) -> tuple[int, int]:
    """(bytes of the files only `root` holds, bytes of all its files)."""
    own = total = 0
    for path in root.rglob("*"):
        stat = path.lstat()
        if path.is_file() and not path.is_symlink():
            total += stat.st_size
            own += stat.st_size if stat.st_nlink == 1 else 0
    return own, total


def one_run(host: str, scratch: Path, own_b: int) -> dict[str, float]:
    """One repetition, into caches of its own."""
    blobs = scratch / "skopeo-blobs"
    os.sync()  # what earlier runs wrote is on disk, not written back during this one
    seconds_skopeo, _ = stats.timed(
        lambda: _skopeo(
            "copy", "--quiet", "--dest-shared-blob-dir", str(blobs),
            f"docker://{host}/bench/a:bench", f"oci:{scratch / 'skopeo-layout'}:bench",
        )
    )  # fmt: skip
    cache = ImageCache(scratch / "images")
    os.sync()
    seconds_sprout, image = stats.timed(lambda: pull(f"{host}/bench/a:bench", cache=cache))
    seconds_b, b = stats.timed(lambda: pull(f"{host}/bench/b:bench", cache=cache))
    seconds_c, c = stats.timed(lambda: pull(f"{host}/bench/c:bench", cache=cache))
    own_c, all_c = _rootfs_bytes(Path(c.rootfs))
    result = {
        "skopeo_s": seconds_skopeo,
        "sprout_s": seconds_sprout,
        "b_s": seconds_b,
        "c_s": seconds_c,
        "b_fetched_bytes": float(b.source["fetched_bytes"]),
        "b_own_bytes": float(own_b),
        "c_unlinked_bytes": float(own_c),
        "c_rootfs_bytes": float(all_c),
    }
    if os.geteuid() == 0:
        store = LayerStore(scratch / "layers", place=False)
        started = time.monotonic()
        with Sandbox.create(store, image=image.rootfs, network=False) as sandbox:
            sandbox.run("true")
        result["first_call_s"] = time.monotonic() - started
    return result


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    os.environ["SPROUT_STORE_FS"] = "off"  # the caches are plain folders that go with it
    started = time.monotonic()
    third = args.megabytes * 1_000_000 // 3
    with tempfile.TemporaryDirectory(prefix="sprout-bench-images-") as temporary:
        scratch = Path(temporary)
        base = _layer({"opt/base": os.urandom(third)}, programs=["/bin/sh", "/bin/true"])
        middle = _layer({"opt/middle": os.urandom(third)})
        own_a, own_b = _layer({"opt/a": os.urandom(third)}), _layer({"opt/b": os.urandom(2 << 20)})
        own_c = _layer({"opt/c": os.urandom(2 << 20)})
        write_layout(scratch / "layout-a", [base, middle, own_a])
        write_layout(scratch / "layout-b", [base, middle, own_b])
        write_layout(scratch / "layout-c", [base, middle, own_c])
        with registry(scratch) as host:
            conf = scratch / "registries.conf"
            conf.write_text(f'[[registry]]\nlocation = "{host}"\ninsecure = true\n')
            os.environ["CONTAINERS_REGISTRIES_CONF"] = str(conf)
            for name in ("a", "b", "c"):
                _skopeo(
                    "copy", "--quiet", "--dest-tls-verify=false",
                    f"oci:{scratch / f'layout-{name}'}:bench", f"docker://{host}/bench/{name}:bench",
                )  # fmt: skip
            runs = []
            for number in range(args.repeat):
                folder = scratch / f"run-{number}"
                folder.mkdir()
                runs.append(one_run(host, folder, len(own_b[0])))
                shutil.rmtree(folder, ignore_errors=True)
    rows = [["measure", "median", "range", "runs"]]
    figures: dict[str, object] = {}
    measures = [
        (f"skopeo copy of A alone ({args.megabytes} MB, 3 layers)", "skopeo_s"),
        ("sprout image pull of A (copy + unpack)", "sprout_s"),
        ("B after A (fetches its layer, unpacks the shared two once more)", "b_s"),
        ("C after B (fetches its layer, links the shared two)", "c_s"),
        *(
            [("first call in a sandbox over A", "first_call_s")]
            if "first_call_s" in runs[0]
            else []
        ),
    ]
    for label, key in measures:
        values = [r[key] for r in runs]
        mid = statistics.median(values)
        rows.append(
            [label, f"{mid:.3f} s", f"{min(values):.3f}-{max(values):.3f} s", str(len(values))]
        )
        figures[key] = {
            "median_s": mid,
            "min_s": min(values),
            "max_s": max(values),
            "samples_s": values,
        }
    overhead = statistics.median(r["sprout_s"] / r["skopeo_s"] for r in runs)
    shared = statistics.median(r["b_fetched_bytes"] / r["b_own_bytes"] for r in runs)
    rows.append(
        [
            "sprout / skopeo (median of per-run ratios; target <= 1.3)",
            stats.fmt_ratio(overhead),
            "",
            "",
        ]
    )
    rows.append(["B's bytes fetched / B's own layer (target <= 1.05)", f"{shared:.3f}", "", ""])
    unlinked = statistics.median(r["c_unlinked_bytes"] / r["c_rootfs_bytes"] for r in runs)
    rows.append(["C's root filesystem: bytes not linked / all", f"{unlinked:.3f}", "", ""])
    print(stats.render_table(rows, markdown=args.markdown))
    if args.out:
        stats.write_json(
            args.out,
            {
                "benchmark": "images",
                "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                "command": shlex.join(sys.argv),
                "megabytes": args.megabytes,
                "figures": figures,
                "sprout_over_skopeo": overhead,
                "b_fetched_over_own": shared,
                "c_unlinked_over_all": unlinked,
                "runs": runs,
                "machine": stats.machine_facts(tempfile.gettempdir()),
                "elapsed_s": round(time.monotonic() - started, 1),
            },
        )
    return 0
