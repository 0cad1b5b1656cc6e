"""`oracle` and `oracle-noise`: scripted models that replay a task's reference solution.

The oracle checks that a task, its environment and its verifier agree; the noisy
oracle makes seeded mistakes so the whole loop (analyst, reviewer, branches) can
be exercised without a model server. Neither keeps hidden state about where it
is: the step to play is read back from the messages, so a branch whose context
is rebuilt from a checkpoint gets the same decision as the attempt it came from.

How the messages are read (`next_step`), with ``next = 0`` at the start and the
assistant messages (string content) taken in order:

- one of our own replies (its first line is ``Following the reference solution,
  step S/N.``) sets ``next = S``: it believes it did step S, so S + 1 comes next
  (as a 0-based index, S);
- any other assistant message is a *corrective turn* (a reviewer's starting
  turn, written in the actor's voice). If one of its ```` ```bash ````, ```` ```sh ````
  or bare ```` ``` ```` blocks, whitespace-normalised, equals the command of a step,
  that step was done by the turn and the one after it comes next (the last such
  block wins; when several steps share that command, the first at or after the
  current ``next`` is taken, else the last one before it). Otherwise, if the
  turn says ``step N`` for a step number 1..N of this task (the last mention
  wins), step N comes next: the turn announced it and the oracle obeys. A turn
  that does neither leaves ``next`` unchanged.

Then step ``next`` is played, or the submit command once every step is done.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sprout.fences import shell_blocks
from sprout.models.estimate import estimate_tokens
from sprout.models.types import Choice, Completion, Message, ModelError

SUBMIT_COMMAND = "echo SPROUT_SUBMIT"
"""What the oracles run once every step is done; the actor treats it as a submission."""

DEFAULT_P = 0.3
DEFAULT_SEED = 1

_OWN_STEP = re.compile(r"Following the reference solution, step (\d+)/(\d+)\.")
_OWN_DONE = re.compile(r"Following the reference solution: all (\d+) steps done\.")
_STEP_MENTION = re.compile(r"\bstep\s+(\d+)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Step:
    """One step of a reference solution, with the wrong variants a task may offer for it."""

    command: str
    wrong: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # A list from a task file would make the step unhashable; store a tuple.
        object.__setattr__(self, "wrong", tuple(self.wrong))


def as_steps(steps: Iterable[Step | str]) -> tuple[Step, ...]:
    """`steps` as `Step`s: a plain string is a step's command with no wrong variants."""
    converted = []
    for number, step in enumerate(steps, start=1):
        if isinstance(step, str):
            step = Step(step)
        if not isinstance(step, Step):
            raise ModelError(
                "bad_input",
                f"oracle: step {number}: expected a Step or a command string, "
                f"got {type(step).__name__}",
            )
        converted.append(step)
    return tuple(converted)


def step_reply(number: int, total: int, command: str) -> str:
    """The oracle's reply that runs `command`, labelled as step `number` (1-based) of `total`."""
    return f"Following the reference solution, step {number}/{total}.\n\n```bash\n{command}\n```"


def submit_reply(total: int, command: str) -> str:
    """The oracle's reply once all `total` steps are done: it runs the submit command."""
    return f"Following the reference solution: all {total} steps done.\n\n```bash\n{command}\n```"


def next_step(messages: list[Message], steps: Sequence[Step]) -> int:
    """The 0-based index of the step to play after `messages` (``len(steps)``: submit).

    The rules are in this module's docstring.
    """
    commands = [_normalise(step.command) for step in steps]
    following = 0
    for message in messages:
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, str):
            continue
        if own := _OWN_STEP.match(content):
            following = int(own.group(1))
        elif _OWN_DONE.match(content):
            following = len(steps)
        else:
            following = _after_corrective_turn(content, commands, following)
    return following


def _follows_corrective_turn(messages: list[Message]) -> bool:
    """Whether the last reply in `messages` was written by someone other than the oracle."""
    for message in reversed(messages):
        content = message.get("content")
        if message.get("role") == "assistant" and isinstance(content, str):
            return not (_OWN_STEP.match(content) or _OWN_DONE.match(content))
    return False


def _after_corrective_turn(content: str, commands: list[str], following: int) -> int:
    for block in reversed(shell_blocks(content)):
        matches = [j for j, command in enumerate(commands) if command == _normalise(block)]
        if matches:
            ahead = [j for j in matches if j >= following]
            return (ahead[0] if ahead else matches[-1]) + 1
    for mention in reversed(_STEP_MENTION.findall(content)):
        if 1 <= int(mention) <= len(commands):
            return int(mention) - 1
    return following


def _normalise(command: str) -> str:
    return " ".join(command.split())


def _completion(messages: list[Message], replies: list[str], started: float) -> Completion:
    prompt = "".join(m["content"] for m in messages if isinstance(m.get("content"), str))
    return Completion(
        tuple(Choice(reply, "stop") for reply in replies),
        prompt_tokens=estimate_tokens(prompt),
        completion_tokens=sum(estimate_tokens(reply) for reply in replies),
        estimated=True,
        latency_s=time.monotonic() - started,
    )


class OracleModel:
    """Replays a reference solution one step per turn, then submits.

    `temperature`, `tools` and `logprobs` are accepted and ignored: the replies
    are scripted, `n` choices are `n` copies, and log-probs are never returned.
    Token counts are estimates from text length, marked `estimated`.
    """

    def __init__(
        self, steps: Iterable[Step | str], *, submit_command: str = SUBMIT_COMMAND
    ) -> None:
        self.name = "oracle"
        self.steps = as_steps(steps)
        self.submit_command = submit_command

    def reply(self, index: int) -> str:
        """The reply that plays step `index` (0-based), or submits when it is past the last."""
        if index >= len(self.steps):
            return submit_reply(len(self.steps), self.submit_command)
        return step_reply(index + 1, len(self.steps), self.steps[index].command)

    def complete(
        self,
        messages: list[Message],
        *,
        n: int = 1,
        temperature: float | None = None,
        logprobs: bool = False,
        tools: list[dict[str, Any]] | None = None,
    ) -> Completion:
        """`n` copies of the reply that plays the step `messages` call for."""
        started = time.monotonic()
        reply = self.reply(next_step(messages, self.steps))
        return _completion(messages, [reply] * n, started)


class OracleNoiseModel:
    """The oracle with seeded mistakes; it follows corrective turns like the oracle.

    Each time it plays step i (0-based) it makes a mistake with probability `p`:
    it plays one of the step's wrong variants, labelled as step i + 1 (so it
    believes step i is done); a step without wrong variants is skipped instead —
    it plays step i + 1's command, labelled step i + 2, and step i is never run
    (skipping the last step submits). After a corrective turn it resumes the
    reference path from the step that turn addresses (see `next_step`) and plays
    the step right after it as the reference does: it obeys the correction.
    Later steps may go wrong again with probability `p`.

    Randomness: each choice uses ``random.Random(f"{seed}:{digest}:{draw}")``,
    where `digest` is the SHA-256 of the context's decisions (the messages
    other than observations: the prompts and every reply, as canonical JSON;
    observations hold timestamps and timings that would make runs differ) and
    `draw` counts, per instance and thread-safely, the choices already drawn
    for that context. Independent roots of one task start from identical contexts
    and still differ (draws 0, 1, ...), while a fresh instance that receives
    the same sequence of calls replays the same replies. A branch that rebuilds
    an earlier context gets that context's next draw, not a copy of the first.
    """

    def __init__(
        self,
        steps: Iterable[Step | str],
        *,
        p: float = DEFAULT_P,
        seed: int = DEFAULT_SEED,
        submit_command: str = SUBMIT_COMMAND,
    ) -> None:
        if not 0 <= p <= 1:
            raise ModelError("bad_input", f"oracle-noise: p must be in [0, 1], got {p}")
        self.oracle = OracleModel(steps, submit_command=submit_command)
        self.steps = self.oracle.steps
        self.submit_command = submit_command
        self.p = p
        self.seed = seed
        self.name = f"oracle-noise:p={_number(p)},seed={seed}"
        self._draws: dict[str, int] = {}
        self._lock = threading.Lock()

    def complete(
        self,
        messages: list[Message],
        *,
        n: int = 1,
        temperature: float | None = None,
        logprobs: bool = False,
        tools: list[dict[str, Any]] | None = None,
    ) -> Completion:
        """`n` replies to `messages`, each with its own draw; see the class docstring."""
        started = time.monotonic()
        index = next_step(messages, self.steps)
        digest = _fingerprint(messages)
        with self._lock:
            first = self._draws.get(digest, 0)
            self._draws[digest] = first + n
        if _follows_corrective_turn(messages):
            replies = [self.oracle.reply(index)] * n
        else:
            replies = [
                self._play(index, f"{self.seed}:{digest}:{draw}")
                for draw in range(first, first + n)
            ]
        return _completion(messages, replies, started)

    def _play(self, index: int, rng_seed: str) -> str:
        if index >= len(self.steps):
            return self.oracle.reply(index)
        rng = random.Random(rng_seed)
        if rng.random() >= self.p:
            return self.oracle.reply(index)
        wrong = self.steps[index].wrong
        if wrong:
            return step_reply(index + 1, len(self.steps), rng.choice(wrong))
        return self.oracle.reply(index + 1)


def parse_noise_spec(spec: str) -> tuple[float, int]:
    """`(p, seed)` from ``oracle-noise[:p=<0..1>][,seed=<int>]``; either key may be left out."""
    if spec != "oracle-noise" and not spec.startswith("oracle-noise:"):
        raise ModelError(
            "bad_input", f"--model {spec}: expected oracle-noise[:p=<0..1>,seed=<int>]"
        )
    options = spec.removeprefix("oracle-noise").removeprefix(":")
    values: dict[str, str] = {}
    for option in options.split(",") if options else ():
        key, equals, value = (part.strip() for part in option.partition("="))
        if key not in ("p", "seed"):
            raise ModelError(
                "bad_input",
                f"--model {spec}: unknown option {key!r}; expected p=<0..1>, seed=<int>",
            )
        if not equals or not value:
            raise ModelError("bad_input", f"--model {spec}: {key} needs a value, e.g. {key}=1")
        if key in values:
            raise ModelError("bad_input", f"--model {spec}: {key} is given twice")
        values[key] = value
    try:
        p = float(values.get("p", DEFAULT_P))
    except ValueError:
        raise ModelError("bad_input", f"--model {spec}: p must be a number in [0, 1]") from None
    if not 0 <= p <= 1:
        raise ModelError("bad_input", f"--model {spec}: p must be in [0, 1]")
    try:
        seed = int(values.get("seed", DEFAULT_SEED))
    except ValueError:
        raise ModelError("bad_input", f"--model {spec}: seed must be an integer") from None
    return p, seed


def _fingerprint(messages: list[Message]) -> str:
    decisions = [m for i, m in enumerate(messages) if i < 2 or m.get("role") == "assistant"]
    canonical = json.dumps(
        decisions, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def _number(value: float) -> str:
    """`value` as the shortest text that reads back to it: 0.3, 1, 1e-05."""
    return repr(float(value)).removesuffix(".0")
