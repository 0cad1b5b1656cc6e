"""Playing the attempts of one round: the actor's turns, then the verifier, concurrently.

Each step reads what the run database already holds, so a resumed run continues an
attempt from its last committed turn and verifies only what has no reward.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from sprout.sandbox import SandboxError
from sprout.search.halt import AttemptFault, Halted
from sprout.search.recover import rebuild, recover, restart
from sprout.search.state import SearchState
from sprout.tree import Attempt
from sprout.verify import ResultsError
from sprout.workspace import CheckpointLost


@dataclass
class Search(SearchState):
    """One method on one task, played a round at a time (`play`): its state, and what the
    threads of a round share."""

    _passed: threading.Event = field(default_factory=threading.Event)
    _recovered: set[int] = field(default_factory=set)
    """Attempts whose lost checkpoint this search has tried to rebuild: once each."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def attempts(self) -> list[Attempt]:
        """This method's attempts of this task, oldest first."""
        return [a for a in self.tree.attempts(self.task.id) if a.method == self.method.name]

    def has_passed(self) -> bool:
        return any(attempt.passed for attempt in self.attempts())

    def play(self, attempts: Sequence[Attempt]) -> list[Attempt]:
        """Run and verify `attempts` concurrently; with stop-at-pass, a pass ends the others.

        Raises `Halted` when the run halted with some of them unfinished, and
        `AttemptFault` when some ended `error`: a schedule goes no further on a
        round whose outcome is not the model's."""
        self.halt.check()
        if self.method.stop_at_pass and self.has_passed():
            self._passed.set()
        with ThreadPoolExecutor(max_workers=max(min(len(attempts), self.workers), 1)) as pool:
            played = list(pool.map(self._finish, attempts))
        if any(a.status == "running" for a in played):
            raise Halted(self.halt.reason or "halted")
        faulted = [a for a in played if a.status == "error"]
        if faulted:
            first = (faulted[0].end_reason or "").partition("\n")[0]
            raise AttemptFault(
                f"{len(faulted)} of {len(played)} attempts ended in error ({faulted[0].fault})",
                first,
            )
        return played

    def _should_stop(self) -> bool:
        return self.method.stop_at_pass and self._passed.is_set()

    def _finish(self, attempt: Attempt) -> Attempt:
        if attempt.status == "running":
            with self.slots:
                if self.halt.is_set():
                    return attempt
                if self._should_stop():
                    self.tree.finish_attempt(
                        attempt.id, "stopped", "stopped: another attempt passed"
                    )
                else:
                    self.actor.run(
                        attempt, should_stop=self._should_stop, interrupted=self.halt.is_set
                    )
            attempt = self.tree.attempt(attempt.id)
            if self.halt.attempt_ended(attempt):
                self.progress.halting(self.halt.reason or "")
        if attempt.status == "running":
            return attempt
        if attempt.fault == "lost" and self._first_recovery(attempt):
            with self.slots:  # a rebuild runs calls: it holds a sandbox's place like a turn
                attempt = recover(self, attempt)
            return self._finish(attempt)
        if attempt.status == "error":  # not the model's failure: nothing to verify
            self.progress.attempt_done(attempt, len(self.tree.own_turns(attempt)))
            return attempt
        if attempt.status != "stopped" and attempt.reward is None:
            with self.slots:
                self._verify(attempt)
            attempt = self.tree.attempt(attempt.id)
            if attempt.fault == "lost":  # before the verifier, and it could not be rebuilt
                return self._finish(restart(self, attempt) if attempt.kind == "root" else attempt)
            self.progress.attempt_done(attempt, len(self.tree.own_turns(attempt)))
        elif attempt.status == "stopped":
            self.progress.attempt_done(attempt, len(self.tree.own_turns(attempt)))
        if attempt.passed:
            self._passed.set()
        return attempt

    def _first_recovery(self, attempt: Attempt) -> bool:
        with self._lock:
            first = attempt.id not in self._recovered
            self._recovered.add(attempt.id)
        return first

    def _verify(self, attempt: Attempt) -> None:
        """Store the verifier's reward, diagnostics and patch. A verifier that gives no
        verdict (its fork or runner cannot start, it leaves no result the task requires)
        ends the attempt `error` with fault `verifier`: no reward, never a failed test. A
        checkpoint lost with its node is rebuilt first; one that cannot be leaves the
        attempt `error` with fault `lost` (its outcome is unknown, which is no failure)."""
        checkpoint = self.tree.checkpoint(attempt)
        base_checkpoint = self.tree.checkpoint(
            attempt, 0
        )  # its own root's, even if the task changed
        try:
            try:
                verdict = self.sandboxes.verify(self.task, checkpoint, base_checkpoint)
            except CheckpointLost:
                if not self._first_recovery(attempt) or rebuild(self, attempt).diverged:
                    raise
                verdict = self.sandboxes.verify(self.task, checkpoint, base_checkpoint)
        except CheckpointLost as error:
            self.tree.finish_attempt(attempt.id, "error", f"sandbox: {error}", fault="lost")
            return
        except (SandboxError, ResultsError) as error:
            self.tree.verifier_failed(attempt.id, f"verifier: {error}")
            return
        self.tree.set_outcome(
            attempt.id, verdict.reward, verdict.diagnostics.to_json(), verdict.patch
        )
