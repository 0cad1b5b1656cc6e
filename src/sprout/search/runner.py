"""`sprout run`: every method on every task, into one run folder, resumable.

(task, method) pairs run concurrently up to `workers`, and so do the attempts
of a round; one `Slots` bounds the sandboxes alive at once, and counts the most that
were. Without a number of workers, a run keeps as many alive as the place its sandboxes
run in has room for (`TaskSandboxes.room`: this machine's, or a cluster's). A pair that
fails (a set-up step that breaks, a model server that refuses) is recorded
with its error and the others go on.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from sprout.agent import Actor, ActorConfig
from sprout.agent.ending import crash_reason
from sprout.config import changed_settings
from sprout.errors import SproutError
from sprout.models import Model
from sprout.models.config import ModelConfig
from sprout.models.oracle import Step
from sprout.models.resolve import ModelArgs, ModelSpec
from sprout.models.types import Capabilities, capabilities
from sprout.roles import RolesConfig
from sprout.runfolder import RunFolder
from sprout.sandbox import SandboxError
from sprout.search.halt import AttemptFault, Halt, Halted
from sprout.search.imported import ImportedRoot, adopt
from sprout.search.methods import Method
from sprout.search.registry import describe, needs_logprobs, play
from sprout.search.run_progress import Progress
from sprout.search.schedule_roles import ScheduleRoles
from sprout.search.slots import Slots
from sprout.search.summary import results, write_results
from sprout.search.task_search import Search
from sprout.task import Task, TaskError
from sprout.tasksandbox import TaskSandboxes, TaskSandboxService
from sprout.tasksandbox.room import Room
from sprout.tree import Concurrency, Fault, RunDatabaseError, RunMeta

RETRIED_FAULTS: tuple[Fault, ...] = ("model", "sandbox", "verifier")
"""Faults a resumed pair retries (its attempts continue from their last turn, or are
verified again); a crash of sprout itself is kept as it was recorded, so a resume never
replays it."""


class RunSettingsError(SproutError, ValueError):
    """Settings that contradict each other or the run folder being resumed."""


@dataclass(frozen=True)
class RunSettings:
    """What `sprout run` was asked to do; stored in the run so `--resume` continues it."""

    model: ModelSpec
    """The `--model` string, parsed once where the settings are made."""
    methods: tuple[Method, ...]
    workers: int | None = 1
    """Sandboxes alive at once; None: as many as the place they run in has room for."""
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    actor: ActorConfig = field(default_factory=ActorConfig)
    roles: RolesConfig = field(default_factory=RolesConfig)
    hf_options: dict[str, Any] = field(default_factory=dict)
    """`HFModel` keywords for an `hf/PATH` model (max_new_tokens, device, dtype, seed)."""
    model_options: ModelConfig = field(default_factory=ModelConfig)
    """The `[model]` table: timeouts, retries, reply length, extra request fields."""

    def to_json(self) -> dict[str, Any]:
        """The settings a resume must match (the API key is never stored)."""
        found = {
            "model": self.model.text,
            "methods": [m.to_json() for m in self.methods],
            "actor": self.actor.model_dump(mode="json"),
            "roles": self.roles.model_dump(mode="json"),
        }
        if self.model_options != ModelConfig():  # runs stored before the table match
            found["model_options"] = self.model_options.model_dump(mode="json")
        return found


SETTINGS_TABLES: dict[str, type[BaseModel]] = {
    "actor": ActorConfig,
    "roles": RolesConfig,
    "model_options": ModelConfig,
}
"""The tables of `RunSettings.to_json`, read back through their models on `--resume`."""


def check_settings(settings: RunSettings, model: Model | None = None) -> None:
    """Refuse, before anything runs, what cannot work: entropy with a model with no log-probs.
    `model`: the client the caller built (else `settings.model` says what it can do)."""
    if settings.workers is not None and settings.workers < 1:
        raise RunSettingsError(f"--workers: expected at least 1, got {settings.workers}")
    found = _capabilities(settings, model)
    for method in settings.methods:
        if needs_logprobs(method) and not found.logprobs:
            raise RunSettingsError(
                f"--method {method.name}: needs per-token log-probabilities, and --model "
                f"{settings.model} has none; use an openai/ model whose server returns logprobs"
            )


def _capabilities(settings: RunSettings, model: Model | None) -> Capabilities:
    """What the run's model can do: the client the caller built, else `settings.model`."""
    return capabilities(model) if model is not None else settings.model.capabilities


def shared_model(settings: RunSettings) -> Model | None:
    """The client every pair of the run shares, built once; None for a model built per task
    (it replays the task's solution, which only it may see)."""
    return None if settings.model.capabilities.replays_solution else _model(settings, None)


def open_run(path: str, settings: RunSettings, *, resume: bool) -> RunFolder:
    """The run folder: new, or (with `resume`) the same run with the same settings."""
    run = RunFolder.resume(path) if resume else RunFolder.create_new(path)
    stored = run.tree.meta().settings
    wanted = settings.to_json()
    if stored is None:
        run.tree.update_meta(RunMeta(settings=wanted))
    elif changed := changed_settings(stored, wanted, SETTINGS_TABLES):
        run.close()
        raise RunSettingsError(
            f"{path}: --resume with different settings ({', '.join(changed)}) than the run "
            "was started with; use the same --model, --method and config, or a new --out"
        )
    return run


def run_tasks(
    tasks: Sequence[Task],
    run: RunFolder,
    settings: RunSettings,
    progress: Progress,
    halt: Halt | None = None,
    sandboxes: TaskSandboxes | None = None,
    imported: Mapping[str, Sequence[ImportedRoot]] | None = None,
    model: Model | None = None,
) -> dict[str, Any]:
    """Run every method on every task; returns (and writes) results.json's content.

    With `halt` set (by Ctrl-C, or by the model-fault breaker) nothing new starts,
    and the pairs in flight stay unfinished for `--resume`; `halt.reason` says why.
    `sandboxes` says where the tasks' sandbox work runs (default: the run folder's
    store, on this machine); a pair that ended in error because its task's sandboxes
    lost their place (a node that died) is played again there, as `--resume` would.
    `imported` holds, by task id, attempts played elsewhere that become each method's roots
    (`sprout.search.imported`). The run's tree records a checkpoint once `sandboxes` has
    it on disk where it was sealed (`TaskSandboxes.settle`). `model`: the client every pair
    uses, built by the caller (`sprout run`; verl's agent loop), else `shared_model`'s."""
    check_settings(settings, model)
    sandboxes = sandboxes or TaskSandboxService(run.layers)
    run.tree.settle = sandboxes.settle
    limit = _limit(settings, sandboxes, tasks)
    slots = Slots(limit.attempts)
    replays = _capabilities(settings, model).replays_solution
    context = _RunContext(
        run=run,
        settings=settings,
        progress=progress,
        halt=halt or Halt(),
        slots=slots,
        shared=model if model is not None else shared_model(settings),
        bases=_Bases(tasks, slots, sandboxes, replays=replays),
        concurrency=_Concurrency(run, limit, slots),
        imported=imported or {},
    )
    done = {(s["task_id"], s["method"]) for s in run.tree.schedules() if s["status"] == "done"}
    for task in tasks:
        run.tree.add_task(task.id, task.model_dump(mode="json"))
    pairs = [(t, m) for t in tasks for m in settings.methods if (t.id, m.name) not in done]
    progress.header(f"{len(pairs)} (task, method) pairs, {limit.attempts} at once: {limit.basis}")
    left = {task.id: sum(1 for t, _ in pairs if t.id == task.id) for task in tasks}
    left_lock = threading.Lock()

    def one(task: Task, method: Method) -> None:
        try:
            _play_in_place(context, task, method)
        finally:
            with left_lock:
                left[task.id] -= 1
                over = left[task.id] == 0
            if over:
                context.bases.sandboxes.release(task)

    with ThreadPoolExecutor(max_workers=limit.attempts) as pool:
        for future in [pool.submit(one, task, method) for task, method in pairs]:
            future.result()
    return _write_results(context)


def _limit(settings: RunSettings, sandboxes: TaskSandboxes, tasks: Sequence[Task]) -> Room:
    """How many sandboxes the run keeps alive at once, and why that many."""
    if settings.workers is not None:
        return Room(settings.workers, f"--workers {settings.workers}")
    return sandboxes.room(tasks) if tasks else Room(1, "no tasks")


class _Concurrency:
    """The run's meta `concurrency`: its limit, why, and the most sandboxes that ran at once
    over the whole run (a resumed run's earlier peak included), measured by its `Slots`."""

    def __init__(self, run: RunFolder, limit: Room, slots: Slots) -> None:
        self._run = run
        self._limit = limit
        self._slots = slots
        earlier = run.tree.meta().concurrency
        self._earlier = 0 if earlier is None else earlier.peak

    def record(self) -> None:
        peak = max(self._earlier, self._slots.peak)
        limit = Concurrency(workers=self._limit.attempts, basis=self._limit.basis, peak=peak)
        self._run.tree.update_meta(RunMeta(concurrency=limit))


def _play_in_place(context: _RunContext, task: Task, method: Method) -> None:
    """Play the pair, and again each time it ended in error because its task's sandboxes
    moved meanwhile (their node died): its attempts continue where the tree has them."""
    sandboxes = context.bases.sandboxes
    while not context.halt.is_set():
        moves = sandboxes.moves(task)
        if not _play_pair(context, task, method):
            return
        _write_results(context)
        if sandboxes.moves(task) == moves or _ended_well(context.run, task, method):
            return
        context.progress.event(task.id, method.name, "its sandboxes moved: played again")


def _ended_well(run: RunFolder, task: Task, method: Method) -> bool:
    return any(
        s["status"] == "done"
        for s in run.tree.schedules()
        if (s["task_id"], s["method"]) == (task.id, method.name)
    )


class _Bases:
    """Checkpoint 0 of each task, built once per run (and once more wherever its sandboxes
    move) by the first pair that needs it (a failure too: every pair of that task reports
    it); a model that replays the solution gets the solution's checkpoint instead, and
    only it ever sees the solution."""

    def __init__(
        self, tasks: Sequence[Task], slots: Slots, sandboxes: TaskSandboxes, *, replays: bool
    ) -> None:
        self.sandboxes = sandboxes
        self._slots = slots
        self._replays = replays
        self._found: dict[tuple[str, int], str | BaseException] = {}
        self._locks = {task.id: threading.Lock() for task in tasks}

    def __call__(self, task: Task) -> str:
        with self._locks[task.id]:
            key = (task.id, self.sandboxes.moves(task))
            if key not in self._found:
                try:
                    with self._slots:
                        self._found[key] = self.sandboxes.base_checkpoint(
                            task, replays=self._replays
                        )
                except (TaskError, SandboxError) as error:
                    self._found[key] = error
            found = self._found[key]
        if isinstance(found, BaseException):
            raise found
        return found


@dataclass(frozen=True)
class _RunContext:
    """What every (task, method) pair of one `run_tasks` shares."""

    run: RunFolder
    settings: RunSettings
    progress: Progress
    halt: Halt
    slots: Slots
    """Sandboxes that may run at once across the whole run (`--workers`)."""
    shared: Model | None
    """The model every pair uses; None for models built per task (they replay its solution)."""
    bases: _Bases
    concurrency: _Concurrency
    imported: Mapping[str, Sequence[ImportedRoot]] = field(default_factory=dict)
    """Attempts played elsewhere, by task id: each method's roots."""


def _play_pair(context: _RunContext, task: Task, method: Method) -> bool:
    """Play `method` on `task` to the end and record how it ended; False when it stopped
    unfinished (halted, or the run folder cannot be written), for `--resume`."""
    tree, progress, halt = context.run.tree, context.progress, context.halt
    tree.start_schedule(task.id, method.name)
    retried = tree.reopen_attempts(task.id, method.name, RETRIED_FAULTS)
    again = f"; {retried} attempts that a fault ended are continued" if retried else ""
    progress.event(task.id, method.name, f"start: {describe(method)}{again}")
    try:
        search = _search(context, task, method)
        adopt(search, context.imported.get(task.id, ()))
        settings = context.settings
        play(method, search, ScheduleRoles(search, settings.actor, settings.roles))
    except Halted:
        with contextlib.suppress(RunDatabaseError):  # a database that refuses halted the run
            tree.pause_schedule(task.id, method.name)
        progress.event(task.id, method.name, "interrupted: --resume continues it")
        return False
    except RunDatabaseError as error:  # the run folder cannot be written: stop everything
        if halt.stop(str(error)):
            progress.halting(str(error))
        return False
    except AttemptFault as error:
        tree.finish_schedule(task.id, method.name, resolved=None, error=str(error))
        progress.event(task.id, method.name, f"ERROR: {error.count} (reason above)")
    except SproutError as error:  # the task, the sandbox, the model server, the verifier...
        tree.finish_schedule(task.id, method.name, resolved=None, error=str(error))
        progress.event(task.id, method.name, f"ERROR: {error}")
    except Exception as error:  # a bug of sprout's ends this pair, not the run
        reason = crash_reason(error, "schedule")
        tree.finish_schedule(task.id, method.name, resolved=None, error=reason)
        progress.event(task.id, method.name, f"ERROR: {reason.partition(chr(10))[0]}")
    else:
        resolved = search.has_passed()
        tree.finish_schedule(task.id, method.name, resolved=resolved, error=None)
        progress.event(task.id, method.name, "resolved" if resolved else "not resolved")
    return True


def _write_results(context: _RunContext) -> dict[str, Any]:
    """results.json rewritten, with the concurrency so far; when its disk refuses, said, and
    the content returned anyway: every figure is in sprout.db, and the next write (or a
    resume) brings the file up to date."""
    run = context.run
    methods = [m.name for m in context.settings.methods]
    try:
        context.concurrency.record()
    except RunDatabaseError as error:  # sprout.db refuses writes: a pair halts the run
        context.progress.warning(f"the concurrency not recorded: {error}")
    try:
        return write_results(run, methods)
    except OSError as error:
        context.progress.warning(f"results.json not written: {error}")
        return results(run, methods)


def _model(settings: RunSettings, task: Task | None) -> Model:
    """The run's model; only one that declares it replays the reference solution (the
    oracle simulations, built per task) is given the task's solution steps. The roles
    never receive them (`tests/roles/test_no_privileged_text.py`)."""
    steps = None
    if task is not None and settings.model.capabilities.replays_solution:
        steps = [Step(s.command, s.wrong, s.trap, s.trap_names) for s in task.solution]
        if not steps:
            raise TaskError(
                f"{task.id}: {task.path / 'solution' / 'solve.sh'}: missing, and --model "
                f"{settings.model} replays the reference solution"
            )
    args = ModelArgs(
        base_url=settings.base_url,
        api_key=settings.api_key,
        steps=steps,
        hf_options=settings.hf_options,
        options=settings.model_options,
    )
    return settings.model.build(args)


def _search(context: _RunContext, task: Task, method: Method) -> Search:
    """The search of `method` on `task`; oracle models get an instance per pair, so each
    method sees the same draws for the same contexts."""
    run, settings = context.run, context.settings
    base_checkpoint = context.bases(task)
    model = context.shared if context.shared is not None else _model(settings, task)
    config = settings.actor
    if needs_logprobs(method) and not config.logprobs:
        config = config.model_copy(update={"logprobs": True})
    sandboxes = context.bases.sandboxes
    actor = Actor(model, run.tree, sandboxes.workspace(task), config)
    return Search(
        task=task,
        method=method,
        tree=run.tree,
        sandboxes=sandboxes,
        actor=actor,
        base_checkpoint=base_checkpoint,
        prefix=actor.prefix(task.instruction, task.workdir),
        slots=context.slots,
        workers=context.slots.limit,
        progress=context.progress,
        halt=context.halt,
    )
