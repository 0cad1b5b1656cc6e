"""What the `sprout` subcommands share: the bad-input error and how tasks are named."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sprout.errors import SproutError
from sprout.tasks import LoadedTasks

if TYPE_CHECKING:
    from sprout.agent import ActorConfig
    from sprout.images.names import ImageMode
    from sprout.sandbox import IsolationReport
    from sprout.task import Task
    from sprout.tasks.setup.image_choice import ChosenImages


class UsageError(SproutError):
    """Bad input found after parsing: printed as one line, exit code 2."""


IMAGE_MODES: dict[str, ImageMode] = {"pull": "pull", "cache": "cache", "approximate": "approximate"}


def add_agent_config_argument(parser: argparse.ArgumentParser) -> None:
    """--agent-config: the actor plays mini-swe-agent's protocol with a config of its own."""
    parser.add_argument(
        "--agent-config",
        metavar="SPEC",
        action="append",
        help="a mini-swe-agent agent config for the actor, read as mini-swe-agent's -c reads "
        "it: a YAML file, KEY.PATH=VALUE, or mini:NAME for one the installed mini-swe-agent "
        "ships (mini:swebench, mini:default); repeat to merge (docs/integrations.md)",
    )


def with_agent_config(actor: ActorConfig, args: argparse.Namespace) -> ActorConfig:
    """`actor` playing the mini-swe-agent config of --agent-config, when given."""
    if not args.agent_config:
        return actor
    from sprout.integrations.minisweagent import read_agent_config

    return read_agent_config(args.agent_config, actor)


def add_task_source_arguments(parser: argparse.ArgumentParser) -> None:
    """--images, --repos, --run-scripts, --swe-gym and --swe-smith: where tasks' images,
    SWE-bench clones, SWE-bench Pro's run scripts, SWE-Gym's harness tables and SWE-smith's
    profiles are found."""
    parser.add_argument(
        "--images",
        metavar="MODE|FILE",
        action="append",
        default=[],
        help="where images come from: pull (default: the image cache, else the registry, "
        "else a Debian approximation when no registry answers), cache (the image cache "
        "only), approximate (the cache, else Debian, no registry); or a TOML [images] "
        "table (FROM name -> root-filesystem folder). Give it twice for both",
    )
    parser.add_argument(
        "--images-from",
        metavar="RESULTS",
        help="an earlier run's results.json: each task stands on the digest that run pulled "
        "for it, however its tag moved since, here or on another machine",
    )
    parser.add_argument("--repos", metavar="DIR", help="local clones of SWE-bench repositories")
    parser.add_argument(
        "--run-scripts",
        metavar="DIR",
        help="SWE-bench Pro's run_scripts/ folder (the publisher's run_script.sh and parser.py "
        "per instance); default: the one beside the rows' file",
    )
    parser.add_argument(
        "--swe-gym",
        metavar="DIR",
        help="a checkout of SWE-Gym's fork of SWE-bench's harness: SWE-bench-shaped rows "
        "without an eval_script are SWE-Gym's, their specifications and parsers its",
    )
    parser.add_argument(
        "--swe-smith",
        metavar="PYTHON",
        help="a Python interpreter with the swesmith package: SWE-smith's rows are read and "
        "graded by its repository profiles",
    )


def _image_arguments(values: list[str]) -> tuple[ImageMode, str | None]:
    """(the image mode, the [images] table's file) of the --images given."""
    modes = [value for value in values if value in IMAGE_MODES]
    tables = [value for value in values if value not in IMAGE_MODES]
    if len(modes) > 1 or len(tables) > 1:
        raise UsageError(f"--images {' '.join(values)}: at most one mode and one table file")
    return (IMAGE_MODES[modes[0]] if modes else "pull"), (tables[0] if tables else None)


def load_task_arguments(
    paths: list[str], args: argparse.Namespace, recorded: dict[str, Any] | None = None
) -> LoadedTasks:
    """The tasks under `paths` (with --images, --repos and --run-scripts) on the images this
    run chose (the digests `recorded` by an earlier run of them first), and every one that
    failed to load or has no image."""
    loaded, choose = load_tasks_unchosen(paths, args, recorded)
    chosen = choose(loaded.tasks)
    return LoadedTasks(chosen.tasks, [*loaded.errors, *chosen.errors], chosen.record())


def load_tasks_unchosen(
    paths: list[str], args: argparse.Namespace, recorded: dict[str, Any] | None = None
) -> tuple[LoadedTasks, Callable[[Sequence[Task]], ChosenImages]]:
    """`load_task_arguments` in two: the tasks under `paths` as read (no image chosen,
    nothing pulled), and what chooses the images of those given it, so that a command
    that plays only some of them (`sprout train --tasks-per-step`) pulls only theirs."""
    from sprout.tasks import load_tasks
    from sprout.tasks.discover import load_image_table, read_again
    from sprout.tasks.setup.image_choice import choose_task_images

    mode, table = _image_arguments(args.images)
    if args.images_from:  # a resumed run's own record wins over the one it was told of
        recorded = {**recorded_images(Path(args.images_from), required=True), **(recorded or {})}
    images = load_image_table(table) if table else None
    loaded = load_tasks(
        paths,
        images=images,
        repos=args.repos,
        run_scripts=args.run_scripts,
        swe_gym=args.swe_gym,
        swe_smith=args.swe_smith,
    )

    def choose(tasks: Sequence[Task]) -> ChosenImages:
        return choose_task_images(
            tasks,
            mode,
            say=lambda line: print(line, file=sys.stderr),
            recorded=recorded,
            reread=lambda task: read_again(task, images),
        )

    return loaded, choose


def recorded_images(path: Path, *, required: bool = False) -> dict[str, Any]:
    """The images the run of results file `path` pulled, by task (its `images`), so that
    this run stands on the same digests. None recorded (a resumed run with no results
    yet): empty; unless `required` (`--images-from` named the file), then an error."""
    where = f"--images-from {path}" if required else str(path)
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
        images = content.get("images")
    except FileNotFoundError:
        if not required:
            return {}
        raise UsageError(f"{where}: no such file") from None
    except (OSError, ValueError, AttributeError) as error:
        raise UsageError(f"{where}: cannot be read for its images ({error})") from None
    if required and "tasks" not in content:  # a run that pulled nothing records no images
        raise UsageError(f"{where}: no `tasks` or `images` (not the results.json of a sprout run)")
    return images if isinstance(images, dict) else {}


def usable_tasks(loaded: LoadedTasks, command: str) -> LoadedTasks:
    """Say which tasks were skipped and why (and each task warning once); refuse a run
    with no task left."""
    from sprout.tasks.discover import grouped_warnings

    for error in loaded.errors:
        print(f"sprout {command}: skipped: {error}", file=sys.stderr)
    for line in grouped_warnings((task.id, task.warnings) for task in loaded.tasks):
        print(f"warning: {line}", file=sys.stderr)
    if not loaded.tasks:
        raise UsageError("no task could be loaded (see the lines above)")
    return loaded


def add_isolation_argument(parser: argparse.ArgumentParser) -> None:
    """--isolation: refuse to run model-written commands on a machine that cannot jail them."""
    parser.add_argument(
        "--isolation",
        choices=("full", "none"),
        default="full",
        help="full (default): refuse to start where the sandbox cannot hold (see `sprout "
        "doctor`); none: run anyway, said on every progress line and in results.json",
    )


def refuse_model_servers(urls: list[str | None]) -> None:
    """No sandbox of this run reaches the model servers it talks to (`--base-url`, else
    OPENAI_BASE_URL), wherever they are: their IPv4 addresses join the firewall's refused
    ones. A name that does not resolve is left to the model client to report."""
    import socket
    import urllib.parse

    from sprout.sandbox import refuse_addresses

    found: list[str] = []
    for url in urls:
        host = urllib.parse.urlsplit(url).hostname if url else None
        if host:
            try:
                infos = socket.getaddrinfo(host, None, socket.AF_INET)
            except (OSError, UnicodeError):
                continue
            found += [str(info[4][0]) for info in infos]
    refuse_addresses(found)  # with none, too: SPROUT_NETWORK_REFUSE is checked at the start


def check_isolation(out: str, isolation: str, command: str) -> IsolationReport:
    """What this machine gives the sandboxes of a run in folder `out`; refuse to go on
    without a jail unless `--isolation none` (before anything is written), and say what is
    only warned about (an unenforced disk cap)."""
    from sprout.sandbox import probe_isolation

    report = probe_isolation(store_path=os.path.join(out, "layers"))
    if not report.holds and isolation != "none":
        why = "; ".join(
            f"{m.name}: {m.detail}" for m in report.measures if m.name in report.missing
        )
        raise UsageError(
            f"the sandbox cannot hold on this machine (missing: {', '.join(report.missing)}) "
            f"[{why}]; `sprout doctor` says more; --isolation none runs anyway"
        )
    for measure in report.measures:
        if not measure.ok and (not measure.required or isolation == "none"):
            print(
                f"sprout {command}: warning: {measure.name}: {measure.detail} "
                f"({measure.consequence})",
                file=sys.stderr,
            )
    return report
