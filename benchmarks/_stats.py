"""Small helpers shared by the benchmarks: percentiles, timing, units, tables, machine facts.

No third-party dependencies: the benchmarks run from a bare checkout.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between closest ranks."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(seconds: Sequence[float]) -> dict[str, object]:
    """n, p50, p90, min, max and mean of a list of durations, in milliseconds."""
    ms = [s * 1e3 for s in seconds]
    return {
        "n": len(ms),
        "p50_ms": percentile(ms, 50),
        "p90_ms": percentile(ms, 90),
        "min_ms": min(ms),
        "max_ms": max(ms),
        "mean_ms": statistics.fmean(ms),
        "samples_ms": [round(v, 4) for v in ms],
    }


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """Seconds that `fn()` took (monotonic, high resolution), and what it returned."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def fmt_ms(ms: float) -> str:
    """A duration given in milliseconds, in the unit that reads best."""
    if ms < 1:
        return f"{ms * 1e3:.0f} µs"
    if ms < 1000:
        return f"{ms:.2f} ms" if ms < 100 else f"{ms:.0f} ms"
    return f"{ms / 1e3:.2f} s"


def fmt_bytes(n: float) -> str:
    """Decimal units (1 MB = 10^6 bytes), as disk vendors and `du --si` write them."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}" if abs(n) < 100 * scale else f"{n / scale:.0f} {unit}"
    return f"{n:.0f} B"


def fmt_ratio(r: float) -> str:
    if r == 0:
        return "0"
    if r >= 1000:
        return f"{r:,.0f}x"
    if r >= 10:
        return f"{r:.1f}x"
    if r >= 0.01:
        return f"{r:.3f}x"
    return f"1/{1 / r:,.0f}"


def p50(found: Mapping[str, Any]) -> float:
    """The median of a `summary`, in milliseconds: what a table row and a target read."""
    return float(found["p50_ms"])


def p90(found: Mapping[str, Any]) -> float:
    """The 90th percentile of a `summary`, in milliseconds."""
    return float(found["p90_ms"])


def utc_now() -> str:
    """This moment in UTC to the second, as the benchmarks' JSON documents date a run."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _section_starts(sections: Sequence[str] | None, count: int) -> list[str | None]:
    """For each of `count` rows, the section it opens (its name where it differs from the
    row before's), else None; no sections: no row opens one."""
    if sections is None:
        return [None] * count
    if len(sections) != count:
        raise ValueError(f"{len(sections)} sections for {count} rows")
    return [name if i == 0 or sections[i - 1] != name else None for i, name in enumerate(sections)]


def render_table(
    rows: Sequence[Sequence[str]],
    *,
    markdown: bool = False,
    sections: Sequence[str] | None = None,
    max_width: int | None = None,
) -> str:
    """`rows` (the first one the header) as aligned columns, or as a Markdown table for
    docs/benchmarks.md.

    `sections` names, for each row after the header, the section it belongs to: where the
    name changes, a heading opens it (a `-- name` line; in Markdown, a row with the name in
    bold), so that a long table reads in parts. `max_width` bounds the first column's
    padding: a longer figure overhangs its row rather than widening the whole table.
    """
    header, body = list(rows[0]), [list(row) for row in rows[1:]]
    starts = _section_starts(sections, len(body))
    if markdown:

        def cells(row: Sequence[str]) -> str:
            return "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"

        lines = [cells(header), "|" + "---|" * len(header)]
        for start, row in zip(starts, body, strict=True):
            if start is not None:
                lines.append(f"| **{start}** |" + " |" * (len(header) - 1))
            lines.append(cells(row))
        return "\n".join(lines)
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    if max_width is not None:
        widths[0] = min(widths[0], max_width)

    def aligned(row: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()

    lines = [aligned(header)]
    for start, row in zip(starts, body, strict=True):
        if start is not None:
            lines.append(f"-- {start}")
        lines.append(aligned(row))
    return "\n".join(lines)


def _unescape_mount_path(text: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal (\\040 ...)."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 4 <= len(text) and text[i + 1 : i + 4].isdigit():
            out.append(chr(int(text[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def filesystem_of(path: str) -> dict[str, str]:
    """Type, source device and mount point of the filesystem holding `path` (Linux)."""
    target = os.path.realpath(path)
    best: dict[str, str] = {"type": "unknown", "source": "unknown", "mount_point": "/"}
    best_len = -1
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return best
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        rest = right.split()
        if len(fields) < 5 or len(rest) < 2:
            continue
        mount_point = _unescape_mount_path(fields[4])
        inside = target == mount_point or target.startswith(mount_point.rstrip("/") + "/")
        # later lines of an equal mount point are mounted over earlier ones: prefer them
        if inside and len(mount_point) >= best_len:
            best_len = len(mount_point)
            best = {"type": rest[0], "source": rest[1], "mount_point": mount_point}
    return best


def machine_facts(store_dir: str) -> dict[str, object]:
    """Kernel, CPUs, memory and the store's filesystem: what a reader needs to compare runs."""
    cpu_model = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_total_kb = 0
    try:
        with open("/proc/meminfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    mem_total_kb = int(line.split()[1])
                    break
    except OSError:
        pass
    return {
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model,
        "memory_gb": round(mem_total_kb * 1024 / 1e9, 1),
        "python": platform.python_version(),
        "store_dir": os.path.realpath(store_dir),
        "store_filesystem": filesystem_of(store_dir),
    }


def write_json(path: str, data: dict[str, object]) -> Path:
    """Write a benchmark's JSON results, making the folder; the path written."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return out


def write_results(path: str | Path, name: str, store_dir: str, settings: Any, **data: Any) -> Path:
    """A benchmark's JSON document: its name, when, the machine, its settings (an argparse
    namespace) and its figures."""
    document: dict[str, object] = {
        "benchmark": name,
        "when": utc_now(),
        "machine": machine_facts(store_dir),
        "settings": {key: str(value) for key, value in vars(settings).items()},
        **data,
    }
    return write_json(str(path), document)
