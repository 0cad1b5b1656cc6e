"""The `sprout` command's own conventions: `--version`, and `sprout bench` naming every
benchmark of benchmarks/ (read from the folder, so that a new one cannot be forgotten)."""

from __future__ import annotations

import ast
import subprocess
from importlib.metadata import version
from pathlib import Path

from tests.support.repo_paths import REPO, SPROUT


def test_version_is_the_installed_distributions():
    done = subprocess.run([str(SPROUT), "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"sprout-rl {version('sprout-rl')}\n"


def _defines_main(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body)


def test_bench_help_names_every_benchmark_and_only_those():
    done = subprocess.run(
        [str(SPROUT), "bench", "--help"], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())
    listed = said.split("Benchmarks: ", 1)[1].split(".", 1)[0].split(", ")
    modules = sorted((REPO / "benchmarks").glob("*.py"))
    runnable = [p.stem for p in modules if _defines_main(p)]
    assert listed == sorted(runnable)
    shared = [p.stem for p in modules if not _defines_main(p)]
    assert all(name.startswith("_") for name in shared), "a shared part's name starts with _"
