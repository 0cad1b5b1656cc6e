"""`sprout bench sandbox --turn-only --quick`: section 0 runs and writes each figure a reader of
docs/benchmarks.md relies on (a call, a checkpoint and a fork + first call by phase, for
each configuration, quiet and busy; the turn tail; with `--against`, the same turns of
another tree, here this one's own src/). What the figures are is the benchmark's business,
not this test's; that the phases add up to the call is this test's."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import sprout
from sprout.cli import main
from tests.support.requirements import require_host_image

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

CALL = {"launch", "mounts", "limits", "seccomp", "shell", "teardown", "total"}
TURN = {"call", "checkpoint", "first call after a checkpoint", "fork + first call"}


def test_the_turn_section_runs_and_writes_every_phase(tmp_path: Path) -> None:
    require_host_image()
    out = tmp_path / "sandbox.json"
    source = str(Path(sprout.__file__).resolve().parents[1])
    options = ["--turn-only", "--quick", "--out", str(out), "--dir", str(tmp_path)]
    assert main(["bench", "sandbox", *options, "--against", source]) == 0
    results = json.loads(out.read_text())["results"]
    turn = results["turn"]
    for config in ("default", "store fs off", "durable=False"):
        found = turn["quiet"][config]
        assert set(found["call"]) == CALL
        parts = sum(found["call"][phase] for phase in CALL - {"total"})
        assert math.isclose(parts, found["call"]["total"], rel_tol=0.5)
        assert set(found["checkpoint"]) == {"seal", "flush", "database commit"}
        assert set(found["fork"]) == {"fork", "network", "launcher", "first call", "total"}
    assert turn["quiet"]["subprocess bash -c true"]["total"] > 0
    assert set(turn["busy_8"]["default"]["call"]) == CALL
    assert turn["turns"]["one_p99_ms"] >= turn["turns"]["one_p50_ms"] > 0
    against = results["turn_against"]
    assert against["source"] == source
    for tree in ("this tree", "against"):
        assert set(against[tree]) == TURN and min(against[tree].values()) > 0
    assert list(tmp_path.iterdir()) == [out], "the stores are gone"
