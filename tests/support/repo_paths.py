"""Where things are, for tests that read this repository's sources, run its examples or start
its command: computed once here, so that a test module moving to another folder changes no
path."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The repository's root: the folder holding src/, tests/ and examples/."""
TESTS = REPO / "tests"
SPROUT_SOURCE = REPO / "src" / "sprout"
"""The `sprout` package's sources."""
EXAMPLE_TASKS = REPO / "examples" / "tasks"
"""The example tasks `make demo` plays."""
SPROUT = Path(sys.executable).with_name("sprout")
"""The `sprout` command of the Python environment running the tests, for tests that start it
as a user would."""
