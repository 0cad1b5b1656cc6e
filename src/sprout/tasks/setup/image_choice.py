"""Which image each task of a run stands on, decided once when the run starts.

In this order, as `choose_image` takes them: an image already in the cache under
the name; Harbor's `docker_image` (prebuilt: then the Dockerfile is not built);
the Dockerfile's `FROM` (or `[sprout] image`) pulled exactly and the Dockerfile
built over it; and only when no registry answers, sprout's Debian approximation,
marked as such. Every image is said once, with its reason. A pulled image is then
named by its digest in the task, so that every sandbox of the run, on every node
of a cluster and in a rerun elsewhere, stands on the same bytes; a task whose
image was approximated keeps `image_mode = "approximate"` for the same reason.
Images are pulled concurrently, a few at a time. A Dockerfile read before its base
was pulled is read again once it is (`reread`), so that its `$PATH` and other words
see the base's own ENV.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from sprout.images import ImageCache, ImageError
from sprout.images.names import ImageChoice, ImageMode, choose_image, normalize
from sprout.images.pull_progress import PullProgress
from sprout.images.reference import parse_reference
from sprout.task import Task

PULL_WORKERS = 3
"""Images pulled at once: enough to overlap one image's unpacking with another's download,
few enough that one run does not take a registry's whole rate limit."""

Reread = Callable[[Task], "Task | Exception"]
"""A task read again from its folder (an error when it no longer loads)."""


@dataclass
class ChosenImages:
    """The run's tasks on their images, what each image is, and the tasks that have none."""

    tasks: list[Task]
    choices: dict[str, ImageChoice] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    used: dict[str, str] = field(default_factory=dict)
    """The image each task stands on, by task id, as its task named it."""

    def record(self) -> dict[str, dict[str, Any]]:
        """What results.json keeps: each task's image, how it was got, and its digest."""
        return {
            task_id: {"image": name, **self.choices[name].to_json()}
            for task_id, name in self.used.items()
        }


def _references(task: Task) -> Iterable[str]:
    """The image references its Dockerfile's build stands on (folders and `host` are none)."""
    for image in (task.image, *(s.image for s in task.stages)):
        if image and image != "host" and not image.startswith("/"):
            yield image


def pinned_as_recorded(task: Task, recorded: Mapping[str, Any]) -> Task:
    """`task` on the digest an earlier run of it pulled (its `results.json` entry under
    `images`), so that a resumed run, here or on another machine, gets the same bytes
    however the tag moved since. An entry for another image, or without a digest (an
    approximation, an import), changes nothing."""
    entry = recorded.get(task.id)
    if not isinstance(entry, Mapping) or not isinstance(entry.get("digest"), str):
        return task
    named = str(entry.get("image", ""))
    field = "prebuilt_image" if named == task.prebuilt_image else "image"
    if named != getattr(task, field) or parse_reference(named).digest is not None:
        return task
    pinned = f"{parse_reference(named).tagged}@{entry['digest']}"
    return task.model_copy(update={field: normalize(pinned)})


def choose_task_images(
    tasks: Sequence[Task],
    mode: ImageMode = "pull",
    *,
    cache: ImageCache | None = None,
    progress: PullProgress | None = None,
    say: Any = print,
    recorded: Mapping[str, Any] | None = None,
    reread: Reread | None = None,
) -> ChosenImages:
    """`tasks` with the images of this run chosen (`say` tells each once); `recorded`: an
    earlier run's `images` record, whose digests win over the tags (`pinned_as_recorded`);
    `reread`: how a task whose Dockerfile stands on an image pulled now is read again."""
    tasks = [pinned_as_recorded(task, recorded or {}) for task in tasks]
    cache = cache or ImageCache()
    progress = progress or PullProgress()

    def choose(name: str, allowed: ImageMode) -> ImageChoice | ImageError:
        try:
            return choose_image(name, allowed, cache, progress)
        except ImageError as error:
            return error

    def choose_all(names: set[str], allowed: ImageMode) -> dict[str, ImageChoice | ImageError]:
        ordered = sorted(names)
        with ThreadPoolExecutor(PULL_WORKERS) as pool:
            outcomes = pool.map(lambda name: choose(name, allowed), ordered)
            return dict(zip(ordered, outcomes, strict=True))

    # a prebuilt environment first, never approximated (not even a cached approximation):
    # without it the Dockerfile is built
    prebuilt = {t.prebuilt_image for t in tasks if t.prebuilt_image}
    found = choose_all(prebuilt, "cache" if mode == "approximate" else mode)

    def usable(name: str | None) -> bool:
        outcome = found.get(name or "")
        return isinstance(outcome, ImageChoice) and not (outcome.approximation and name in prebuilt)

    building = [t for t in tasks if not usable(t.prebuilt_image)]
    found.update(choose_all({n for t in building for n in _references(t)} - set(found), mode))
    chosen = ChosenImages([])
    chosen.choices = {n: o for n, o in found.items() if isinstance(o, ImageChoice) and usable(n)}
    for name in sorted(chosen.choices):
        say(f"image {chosen.choices[name].reason}")
    for task in tasks:
        if reread is not None and _stands_on_pulled(task, chosen.choices):
            again = reread(task)
            if isinstance(again, Exception):
                chosen.errors.append(str(again))
                continue
            task = pinned_as_recorded(again, recorded or {})
        placed = _place(task, chosen.choices, found, cache)
        if isinstance(placed, str):
            chosen.errors.append(placed)
            continue
        chosen.tasks.append(placed)
        used = task.prebuilt_image if task.prebuilt_image in chosen.choices else task.image
        if used in chosen.choices:
            chosen.used[task.id] = used
    return chosen


def _stands_on_pulled(task: Task, choices: Mapping[str, ImageChoice]) -> bool:
    """True when `task` builds a Dockerfile over an image this run pulled: one it was read
    without, since the image's ENV was not known then (`cached_env`)."""
    if task.prebuilt_image in choices:
        return False
    return any(choices[name].how == "pulled" for name in _references(task) if name in choices)


def _place(
    task: Task,
    choices: dict[str, ImageChoice],
    found: dict[str, ImageChoice | ImageError],
    cache: ImageCache,
) -> Task | str:
    """`task` on its chosen images, or the one line of why it has none."""
    if task.prebuilt_image in choices:
        return _prebuilt(task, task.prebuilt_image, choices, cache)
    update: dict[str, Any] = {}
    warnings = list(task.warnings)
    unused = ""
    if task.prebuilt_image:
        unused = f"docker_image {task.prebuilt_image}: "
        unused += _why(found[task.prebuilt_image], task.prebuilt_image)
        warnings.append(f"{unused}; its Dockerfile is built instead")
    for image in sorted(set(_references(task))):
        outcome = choices.get(image)
        if outcome is None:
            return f"{task.id}: {found[image]}" + (f" ({unused})" if unused else "")
        if outcome.approximation:  # said in its reason line, and in results.json
            update["image_mode"] = "approximate"
    update["image"] = _pinned(task.image, choices, cache)
    update["stages"] = tuple(
        stage.model_copy(update={"image": _pinned(stage.image, choices, cache)})
        for stage in task.stages
    )
    return task.model_copy(update={**update, "warnings": tuple(warnings)})


def _why(outcome: ImageChoice | ImageError, name: str) -> str:
    if isinstance(outcome, ImageChoice):
        return f"only {outcome.approximation} could stand in for it"
    return str(outcome).removeprefix(f"image {name}: ")


def _prebuilt(task: Task, image: str, choices: dict[str, ImageChoice], cache: ImageCache) -> Task:
    """`task` on its prebuilt environment, as Harbor runs one: no set-up, no stages, and the
    image's own variables (under task.toml's), working folder and user instead of the
    Dockerfile's."""
    config = choices[image].image.source.get("config") or {}
    return task.model_copy(
        update={
            "image": _pinned(image, choices, cache),
            "setup": (),
            "stages": (),
            "env": dict(task.declared_env),
            "workdir": config.get("workdir") or task.workdir,
            "user": config.get("user") or "",
            "user_origin": f"{image}'s config" if config.get("user") else "",
        }
    )


def _pinned(image: str, choices: dict[str, ImageChoice], cache: ImageCache) -> str:
    """A pulled image by its digest (and so named in the cache), anything else as it is."""
    choice = choices.get(image)
    if choice is None or choice.digest is None:
        return image
    reference = parse_reference(image)
    if reference.digest is not None:
        return image
    pinned = f"{reference.tagged}@{choice.digest}"
    cache.name(pinned, choice.image.digest)
    return pinned
