"""A real small run for the viewer's tests: pass@2 and sprout on the two-edit task with
oracle-noise's trap errors at q=1 (every attempt falls into the trap unless warned), so the
tree's shape is known.
Module-scoped: each test module gets its own run, so one that adds to it disturbs no other."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator

import pytest

from sprout.models.resolve import ModelSpec
from sprout.runfolder import RunFolder
from sprout.search import Progress, RunSettings, parse_methods, run_tasks
from sprout.tasks import load_native
from sprout.viewer.server import make_server
from tests.support.browser import browser, page  # noqa: F401  (fixtures for test_browser.py)
from tests.support.requirements import require_host_image
from tests.support.taskfolders import TRAPPED, two_edits_task


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunFolder]:
    require_host_image()
    root = tmp_path_factory.mktemp("viewer")
    task = load_native(two_edits_task(root / "tasks"))
    folder = RunFolder.create_new(root / "run")
    settings = RunSettings(ModelSpec.parse(TRAPPED), parse_methods("pass@2,sprout"), workers=2)
    run_tasks([task], folder, settings, Progress(io.StringIO()))
    yield folder
    folder.close()


@pytest.fixture(scope="module")
def base(run: RunFolder) -> Iterator[str]:
    """The viewer of `run`, served on a free loopback port: its base URL."""
    server = make_server(run.path, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    yield f"http://{host!s}:{port}"
    server.shutdown()
    server.server_close()
