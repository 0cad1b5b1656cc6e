"""`sprout train` as the tests run it: small enough for the tiny model on a CPU, on tasks
whose verifier tosses a coin."""

from __future__ import annotations

from pathlib import Path

from sprout.cli import main

COIN = """#!/bin/bash
# A coin toss: whatever the agent did, some rollouts pass, so groups have variance.
if [ $((RANDOM % 2)) = 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
"""
"""A verifier that passes half the rollouts by chance, so that a group's rewards differ."""


def train_args(tmp_path: Path, model: Path, *extra: str, steps: int = 2) -> list[str]:
    """`sprout train`'s arguments: the model folder `model` on the tasks in `tmp_path/tasks`
    into `tmp_path/run`, small (two turns, a few new tokens, one child a root), then `extra`
    (a later option overrides an earlier one)."""
    return [
        "train", "--model", f"hf/{model}", "--tasks", str(tmp_path / "tasks"),
        "--steps", str(steps), "--out", str(tmp_path / "run"), "--max-turns", "2",
        "--max-new-tokens", "12", "--children", "1", "--lr", "1e-3", "--quiet", *extra,
    ]  # fmt: skip


def train(tmp_path: Path, model: Path, *extra: str, steps: int = 2) -> int:
    """`sprout train` of `train_args`, in this process: its exit code."""
    return main(train_args(tmp_path, model, *extra, steps=steps))
