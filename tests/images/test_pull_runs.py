"""Runs on pulled images: a Terminal-Bench 2 task whose `docker_image` names the test's
registry runs on exactly that image (its files and its config, not an approximation's,
with task.toml's `[environment] env` over its ENV), and the run records the digest it
pulled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sprout.cli import main
from sprout.images import ImageCache
from sprout.tasks import load_tasks
from sprout.tasks.setup.image_choice import ChosenImages, choose_task_images
from tests.support.registry_world import Layout, Registry, layer_blob, tree_blob
from tests.support.requirements import require_overlay
from tests.support.rootfs import build_rootfs
from tests.support.taskfolders import write_task

TEST_SH = """#!/bin/sh
mkdir -p /logs/verifier
if [ "$(cat /etc/tb-image)" = exact ] && [ "$IMAGE_MARK" = from-config ] \\
   && [ "$(cat /app/out.txt)" = done ] && [ "$(pwd)" = /app ] \\
   && [ "$TASK_MARK" = from-task-toml ] && [ -z "$DOCKERFILE_MARK" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def push_task_image(registry: Registry, tmp_path: Path) -> str:
    root = tmp_path / "rootfs"
    build_rootfs(root, extra=("bash",))
    (root / "app").mkdir()
    layout = Layout(tmp_path / "layout")
    config = {
        "Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "IMAGE_MARK=from-config"],
        "WorkingDir": "/app",
    }
    own = layer_blob({"etc/tb-image": b"exact\n"})
    layout.tag("20251031", layout.image([tree_blob(root), own], config=config))
    return registry.push(layout, "20251031", "tb/exact-task")


@pytest.mark.sandbox
def test_a_tb2_task_runs_on_its_docker_image_and_the_run_records_the_digest(
    pulls_removed_after: Registry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    require_overlay()
    trusted = pulls_removed_after
    reference = push_task_image(trusted, tmp_path)
    task = write_task(
        tmp_path / "tasks",
        "exact-task",
        instruction="Write done to /app/out.txt.\n",
        toml=f'version = "1.0"\n\n[environment]\ndocker_image = "{reference}"\n'
        'env = { TASK_MARK = "from-task-toml" }\n'  # over the image's own ENV
        "\n[verifier]\ntimeout_sec = 60\n",
        # the prebuilt image wins: neither its RUN nor its ENV
        dockerfile="FROM acme/never-built:1\nENV DOCKERFILE_MARK=1\nRUN exit 3\n",
        solve="#!/bin/sh\necho done > /app/out.txt\n",
        tests={"test.sh": TEST_SH},
    )
    out = tmp_path / "run"
    code = main(["run", str(task), "--model", "oracle", "--method", "pass@1", "--out", str(out)])
    errors = capsys.readouterr().err
    assert code == 0, errors
    assert f"image {reference}: pulled from {trusted.host} (sha256:" in errors
    content = json.loads((out / "results.json").read_text())
    assert content["tasks"]["exact-task"]["pass@1"]["resolved"] is True, content["tasks"]
    recorded = content["images"]["exact-task"]
    assert recorded["image"] == reference and recorded["how"] == "pulled"
    assert recorded["digest"].startswith("sha256:") and "approximation" not in recorded
    layers = [p.name for p in (out / "layers/r").iterdir()]
    assert any(f"-at-{recorded['digest'][7:19]}-" in name for name in layers), layers


BASE_ENV_TEST_SH = """#!/bin/sh
mkdir -p /logs/verifier
if [ "$(cat /opt/built)" = tool-ran ] && [ "$(tool)" = tool-ran ] \\
   && [ "$TOOL_CONF" = /opt/tool/conf ] && [ "${PATH%%:/usr/bin*}" = /extra/bin:/opt/tool/bin ]
then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


@pytest.mark.sandbox
def test_a_dockerfile_over_a_pulled_base_reads_its_words_over_the_base_images_env(
    pulls_removed_after: Registry,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`ENV PATH=/extra/bin:$PATH` keeps the pulled base's own PATH, and `$TOOL_HOME` is the
    base's: the Dockerfile, first read before the base was here, is read again over it."""
    require_overlay()
    root = tmp_path / "rootfs"
    build_rootfs(root, extra=("bash",))
    (root / "opt/tool/bin").mkdir(parents=True)
    (root / "opt/tool/bin/tool").write_text("#!/bin/sh\necho tool-ran\n")
    (root / "opt/tool/bin/tool").chmod(0o755)
    layout = Layout(tmp_path / "layout")
    config = {"Env": ["PATH=/opt/tool/bin:/usr/bin:/bin", "TOOL_HOME=/opt/tool"]}
    layout.tag("1", layout.image([tree_blob(root)], config=config))
    reference = pulls_removed_after.push(layout, "1", "acme/tool-base")
    dockerfile = (
        f"FROM {reference}\nENV PATH=/extra/bin:$PATH TOOL_CONF=$TOOL_HOME/conf\n"
        "RUN tool > /opt/built\nWORKDIR /app\n"
    )
    task = write_task(
        tmp_path / "tasks",
        "tool-task",
        instruction="Nothing to do.\n",
        dockerfile=dockerfile,
        solve="#!/bin/sh\ntrue\n",
        tests={"test.sh": BASE_ENV_TEST_SH},
    )
    out = tmp_path / "run"
    code = main(["run", str(task), "--model", "oracle", "--method", "pass@1", "--out", str(out)])
    errors = capsys.readouterr().err
    assert code == 0, errors
    assert "TOOL_HOME" not in errors, errors  # no "expands to ''" warning
    content = json.loads((out / "results.json").read_text())
    assert content["tasks"]["tool-task"]["pass@1"]["resolved"] is True, content["tasks"]
    assert content["images"]["tool-task"]["how"] == "pulled"


def test_a_docker_image_no_registry_answers_for_builds_the_dockerfile_instead_said_so(
    tmp_path: Path,
) -> None:
    task = write_task(
        tmp_path / "tasks",
        "offline",
        instruction="Do it.\n",
        toml='[environment]\ndocker_image = "acme/env:20251031"\n',
        dockerfile="FROM host\nWORKDIR /app\n",
        tests={"test.sh": "exit 0\n"},
    )
    said: list[str] = []
    chosen = choose_task_images(load_tasks([task]).tasks, say=said.append)
    [placed] = chosen.tasks
    assert placed.image == "host" and placed.workdir == "/app"
    [warning] = placed.warnings  # the suite's registries.conf sends docker.io to a closed port
    assert warning.startswith("docker_image acme/env:20251031: no registry answered (docker.io")
    assert warning.endswith("; its Dockerfile is built instead")
    assert said == [] and chosen.record() == {}


def test_a_rerun_with_the_record_stands_on_the_digest_pulled_though_the_tag_moved(
    trusted: Registry, tmp_path: Path
) -> None:
    """Another machine (a cache of its own) resuming a run gets the bytes the run pulled;
    without the record it gets what the tag names now."""
    layout = Layout(tmp_path / "layout")
    layout.tag("v1", layout.image([layer_blob({"etc/which": b"first\n"})]))
    reference = trusted.push(layout, "v1", "acme/moving")
    task = write_task(
        tmp_path / "tasks",
        "moving",
        instruction="Do it.\n",
        toml=f'[sprout]\nimage = "{reference}"\n',
        tests={"test.sh": "exit 0\n"},
    )
    first = choose_task_images(load_tasks([task]).tasks, cache=ImageCache(tmp_path / "a"))
    recorded = json.loads(json.dumps(first.record()))  # as results.json keeps it
    assert recorded["moving"]["image"] == reference
    moved = Layout(tmp_path / "moved")
    moved.tag("v1", moved.image([layer_blob({"etc/which": b"second\n"})]))
    trusted.push(moved, "v1", "acme/moving")

    def which(chosen: ChosenImages, cache: ImageCache) -> str:
        [placed] = chosen.tasks
        image = cache.get(placed.image)
        assert image is not None, placed.image
        return (Path(image.rootfs) / "etc/which").read_text()

    tasks = load_tasks([task]).tasks
    elsewhere, fresh = ImageCache(tmp_path / "b"), ImageCache(tmp_path / "c")
    again = choose_task_images(tasks, cache=elsewhere, recorded=recorded)
    assert which(again, elsewhere) == "first\n"
    assert again.record()["moving"]["digest"] == recorded["moving"]["digest"]
    assert which(choose_task_images(tasks, cache=fresh), fresh) == "second\n"


def test_a_resume_whose_results_cannot_be_read_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "results.json").write_text("{not json")
    code = main(["run", str(tmp_path), "--model", "oracle", "--out", str(out), "--resume"])
    assert code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert f"{out / 'results.json'}: cannot be read for its images" in line
    assert (out / "results.json").read_text() == "{not json"


PINNED_TEST_SH = """mkdir -p /logs/verifier
read -r which < /etc/which
if [ "$which" = first ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
"""


@pytest.mark.sandbox
def test_a_run_told_images_from_an_earlier_results_file_stands_on_its_digests(
    pulls_removed_after: Registry, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fresh run (not a resume) given `--images-from` gets the bytes the earlier run
    pulled, though the tag moved and this machine's cache forgot the tag."""
    require_overlay()
    root = tmp_path / "rootfs"
    build_rootfs(root, extra=("bash",))
    layouts = []
    for which in ("first", "second"):
        layout = Layout(tmp_path / which)
        layout.tag(
            "v1", layout.image([tree_blob(root), layer_blob({"etc/which": f"{which}\n".encode()})])
        )
        layouts.append(layout)
    reference = pulls_removed_after.push(layouts[0], "v1", "acme/pinned")
    task = write_task(
        tmp_path / "tasks",
        "pinned",
        instruction="Nothing to do.\n",
        toml=f'[sprout]\nimage = "{reference}"\n',
        solve="#!/bin/sh\ntrue\n",
        tests={"test.sh": PINNED_TEST_SH},
    )

    def run(out: Path, *extra: str) -> dict[str, Any]:
        argv = ["run", str(task), "--model", "oracle", "--method", "pass@1", "--out", str(out)]
        assert main([*argv, *extra]) == 0, capsys.readouterr().err
        return json.loads((out / "results.json").read_text())

    earlier = run(tmp_path / "a")
    assert earlier["tasks"]["pinned"]["pass@1"]["resolved"] is True
    pulls_removed_after.push(layouts[1], "v1", "acme/pinned")
    assert ImageCache().remove(reference)
    later = run(tmp_path / "b", "--images-from", str(tmp_path / "a/results.json"))
    assert later["tasks"]["pinned"]["pass@1"]["resolved"] is True
    assert later["images"]["pinned"]["digest"] == earlier["images"]["pinned"]["digest"]
    capsys.readouterr()
    c = tmp_path / "c"
    assert main(["run", str(task), "--model", "oracle", "--out", str(c), "--images-from", "x"]) == 2
    assert "--images-from x: no such file" in capsys.readouterr().err
    (tmp_path / "other.json").write_text('{"methods": []}')
    told = ["--images-from", str(tmp_path / "other.json")]
    assert main(["run", str(task), "--model", "oracle", "--out", str(c), *told]) == 2
    assert "other.json: no `tasks` or `images`" in capsys.readouterr().err
    assert not c.exists()
