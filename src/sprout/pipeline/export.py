"""`sprout export`'s job: open a run folder, build its samples, write them as records.

It opens the run folder (the tree and its layer store) here, above `sprout.train`,
so that the train package itself reads only the rollout tree and never the sandbox.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from sprout.durable import write_atomically
from sprout.runfolder import RunFolder
from sprout.train.credit import Credit
from sprout.train.export import FORMATS, ExportError, Format, meta_path, write_records
from sprout.train.samples import GroupReport, Overlong, build_samples


def export_run(
    run: str | Path,
    fmt: Format,
    out: str | Path,
    *,
    methods: Sequence[str] | None = None,
    credit: Credit = "grpo",
    train_starting_turn: bool = True,
    max_length: int | None = None,
    overlong: Overlong = "error",
) -> tuple[Path, GroupReport]:
    """Build the samples of run folder `run` (see `build_samples`) and write them to `out`."""
    if fmt not in FORMATS:
        raise ExportError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    folder = RunFolder.open(run)
    try:
        batch = build_samples(
            folder.tree,
            methods=methods,
            credit=credit,
            train_starting_turn=train_starting_turn,
            max_length=max_length,
            overlong=overlong,
        )
        tokenizer = folder.tree.meta().tokenizer_json()
    finally:
        folder.close()
    written = write_records(batch.samples, fmt, out)
    meta = {
        "format": fmt,
        "samples": len(batch.samples),
        "tokenizer": tokenizer,
    }
    write_atomically(str(meta_path(written)), json.dumps(meta, indent=2) + "\n", durable=True)
    return written, batch.report
