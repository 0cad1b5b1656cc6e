"""What a run of the sandbox benchmark hands back: its JSON document and its table."""

import os
import shlex
import sys
from pathlib import Path
from typing import Any

import _stats as stats

from .common import WARMUP, Context, Row

HEADER = ["figure", "p50", "p90", "baseline (p50)", "ratio", "target", "result"]

FIGURE_WIDTH = 78
"""How far the figure column pads: the few longer figures overhang their rows rather than
push every other column right."""


def _cells(row: Row, markdown: bool) -> list[str]:
    figure = row.figure
    if markdown:  # an indented figure details the one above it: Markdown would drop the indent
        figure = ("↳ " if figure.startswith("  ") else "") + figure.strip()
    return [figure, row.p50, row.p90, row.baseline, row.ratio, row.target, row.result]


def render_table(rows: list[Row], markdown: bool) -> str:
    """The rows by section, in the sections' order (sections run out of order: the network's
    runs before the stores'); within a section, in the order they were measured."""
    ordered = sorted(rows, key=lambda r: r.section)  # stable
    return stats.render_table(
        [HEADER, *(_cells(r, markdown) for r in ordered)],
        markdown=markdown,
        sections=[r.section for r in ordered],
        max_width=FIGURE_WIDTH,
    )


def document(
    ctx: Context,
    argv: list[str],
    facts: dict[str, Any],
    provenance: tuple[str | None, str],
    elapsed: float,
) -> dict[str, Any]:
    """The JSON document of a run: how it was started (`provenance`: the checkout's commit
    and the digest of the sandbox sources it imported), on what machine, what it found."""
    commit, source_digest = provenance
    return {
        "benchmark": "sandbox",
        "date": stats.utc_now(),
        "command": shlex.join(sys.argv),
        "cwd": os.getcwd(),
        "sprout_commit": commit,
        "sandbox_source_sha256": source_digest,
        "benchmark_argv": list(argv),
        "machine": facts,
        "store_mode": ctx.mode,
        "sizes": ctx.sizes.__dict__,
        "warmup_runs": WARMUP,
        "elapsed_s": round(elapsed, 1),
        "targets": ctx.checks,
        "results": ctx.results,
        "table": [r.__dict__ for r in ctx.rows],
    }


def print_report(
    ctx: Context, report: dict[str, Any], elapsed: float, out: Path, markdown: bool
) -> list[str]:
    """The run's heading, its table, the targets met and where the JSON went, on stdout;
    the targets missed."""
    facts = report["machine"]
    fsinfo = facts["store_filesystem"]
    print(
        f"sprout bench sandbox — {report['date']}, kernel {facts['kernel']}, "
        f"{facts['cpus']} CPUs, store on {fsinfo['type']} ({fsinfo['source']}), "
        f"mode {ctx.mode}, {elapsed:.0f} s"
    )
    print(render_table(ctx.rows, markdown))
    missed = [c["target"] for c in ctx.checks if not c["pass"]]
    print(
        f"targets: {len(ctx.checks) - len(missed)}/{len(ctx.checks)} met"
        + (f"; missed: {', '.join(missed)}" if missed else "")
    )
    print(f"results: {out}")
    return missed
