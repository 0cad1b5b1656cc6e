"""Task environments benchmark: an image built from Debian's archive, and a task's base layer
built cold and then taken warm by a second run.

Run it with `sprout bench tasks [options]`. Each repetition uses a machine cache
of its own (a temporary SPROUT_CACHE that shares only the image with the real
one), so the cold figure is a real first build: the task's set-up steps run on
the image, with whatever they fetch. The warm figure is a second run folder on
the same machine taking that base layer: linked, not rebuilt. The image build
(`--build-image`) fetches every package from the mirror, so it measures the
mirror as much as sprout; it is off by default and runs once per repetition.
Medians and ranges over `--repeat` runs; JSON to `--out`.
"""

import argparse
import datetime
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _stats as stats
from sprout.durable import cache_dir
from sprout.images import ImageCache
from sprout.images.debian import build_debian
from sprout.images.names import ensure_image, resolve_from
from sprout.sandbox import LayerStore, Sandbox
from sprout.sandbox.jail.helper import helper_build
from sprout.tasks import base_checkpoint_of, load_tasks

DEFAULT_TASK = Path(__file__).resolve().parents[1] / "examples" / "tasks" / "blog-slugs"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="sprout bench tasks", description=__doc__)
    parser.add_argument("--task", type=Path, default=DEFAULT_TASK, help="a task folder")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument(
        "--build-image", action="store_true", help="also time building the task's image cold"
    )
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat: expected at least 1, got {args.repeat}")
    if not (args.task / "instruction.md").is_file():
        parser.error(f"--task: {args.task} is not a task folder (no instruction.md)")
    return args


def bench_image_build(name: str, scratch: Path) -> dict[str, float]:
    """Seconds and bytes of building image `name` from Debian's archive, cold."""
    request = resolve_from(name)
    if request is None or request.recipe is None:
        raise SystemExit(f"sprout bench tasks: {name} is not an image sprout builds itself")
    target = scratch / "image" / "rootfs"
    target.mkdir(parents=True)
    seconds, _ = stats.timed(lambda: build_debian(request.recipe, target))  # type: ignore[arg-type]
    size = sum(p.lstat().st_size for p in target.rglob("*") if p.is_file() and not p.is_symlink())
    shutil.rmtree(target.parent, ignore_errors=True)
    return {"seconds": seconds, "bytes": size}


def bench_base_layer(task_folder: Path, scratch: Path) -> dict[str, float]:
    """Seconds of a task's base layer built cold (a fresh machine cache), then taken by a
    second run folder (warm), then read again by the first (its own ref)."""
    machine = scratch / "machine-cache"
    (machine).mkdir()
    (machine / "images").symlink_to(ImageCache().root)  # the image is shared, nothing else
    previous = os.environ.get("SPROUT_CACHE")
    os.environ["SPROUT_CACHE"] = str(machine)
    try:
        loaded = load_tasks([task_folder])
        if loaded.errors:
            raise SystemExit(f"sprout bench tasks: {loaded.errors[0]}")
        [task] = loaded.tasks
        first, second = LayerStore(scratch / "run-a"), LayerStore(scratch / "run-b")
        cold, base = stats.timed(lambda: base_checkpoint_of(task, first))
        warm, again = stats.timed(lambda: base_checkpoint_of(task, second))
        assert again == base, "the second run should link the first one's base layer"
        with Sandbox.fork(second, base) as sandbox:  # the linked layer is usable
            assert sandbox.run("true").exit_code == 0
        cached, _ = stats.timed(lambda: base_checkpoint_of(task, first))
    finally:
        if previous is None:
            os.environ.pop("SPROUT_CACHE", None)
        else:
            os.environ["SPROUT_CACHE"] = previous
    return {"cold_s": cold, "warm_s": warm, "same_run_s": cached}


def main(argv: list[str]) -> int:
    args = parse_args(list(argv))
    started = time.monotonic()
    helper_build()  # compiled once, into the real cache, before any timing
    loaded = load_tasks([args.task])
    if loaded.errors:
        print(f"sprout bench tasks: {loaded.errors[0]}", file=sys.stderr)
        return 2
    [task] = loaded.tasks
    image_name = task.image
    seconds, image = stats.timed(lambda: ensure_image(image_name))
    print(
        f"image {image_name}: {image.size / 1e6:.0f} MB, ready in {seconds:.1f} s", file=sys.stderr
    )
    runs: list[dict[str, float]] = []
    builds: list[dict[str, float]] = []
    for number in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="sprout-bench-tasks-", dir=cache_dir()) as tmp:
            if args.build_image:
                builds.append(bench_image_build(image_name, Path(tmp)))
            runs.append(bench_base_layer(args.task, Path(tmp)))
        print(
            f"[{time.monotonic() - started:6.1f} s] run {number + 1}: {runs[-1]}", file=sys.stderr
        )

    def median(values: list[float]) -> tuple[float, float, float]:
        return statistics.median(values), min(values), max(values)

    rows = [["measure", "median", "range", "n"]]
    figures: dict[str, object] = {}
    measures = [
        ("base layer, cold (set-up runs)", [r["cold_s"] for r in runs]),
        ("base layer, warm (another run links it)", [r["warm_s"] for r in runs]),
        ("base layer, same run again", [r["same_run_s"] for r in runs]),
    ]
    if builds:
        measures.insert(0, (f"image {image_name}, built cold", [b["seconds"] for b in builds]))
    for label, values in measures:
        mid, low, high = median(values)
        rows.append([label, f"{mid:.3f} s", f"{low:.3f}-{high:.3f} s", str(len(values))])
        figures[label] = {"median_s": mid, "min_s": low, "max_s": high, "samples_s": values}
    ratio = statistics.median(r["cold_s"] / r["warm_s"] for r in runs)
    rows.append(["cold / warm (median of per-run ratios)", stats.fmt_ratio(ratio), "", ""])
    print(stats.render_table(rows, markdown=args.markdown))
    if args.out:
        report = {
            "benchmark": "tasks",
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "command": shlex.join(sys.argv),
            "task": str(args.task),
            "image": {"name": image_name, "bytes": image.size},
            "image_build_bytes": [b["bytes"] for b in builds],
            "figures": figures,
            "cold_over_warm": ratio,
            "machine": stats.machine_facts(str(cache_dir())),
            "elapsed_s": round(time.monotonic() - started, 1),
        }
        stats.write_json(args.out, report)
    return 0
