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
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sprout.fences import shell_blocks
from sprout.models.estimate import estimate_tokens
from sprout.models.types import Capabilities, Choice, Completion, Message, ModelError

SUBMIT_COMMAND = "echo SPROUT_SUBMIT"
"""What the oracles run once every step is done; the actor treats it as a submission."""

REPLAYS = Capabilities(structured_output=False, replays_solution=True)
"""The oracles replay a task's solution: built per task, they write no role output and
return no log-probs."""
DEFAULT_P = 0.3
DEFAULT_SEED = 1

_OWN_STEP = re.compile(r"Following the reference solution, step (\d+)/(\d+)\.")
_OWN_DONE = re.compile(r"Following the reference solution: all (\d+) steps done\.")
_STEP_MENTION = re.compile(r"\bstep\s+(\d+)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Step:
    """One step of a reference solution, with the wrong variants a task may offer for it.

    `trap` is a misconception: a wrong variant that passes every visible check and
    fails only at the verifier; `trap_names` are what the verifier names when it
    fails (a test, a file), which is what warns an attempt off it (see
    `OracleNoiseModel`)."""

    command: str
    wrong: tuple[str, ...] = ()
    trap: str | None = None
    trap_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # A list from a task file would make the step unhashable; store a tuple.
        object.__setattr__(self, "wrong", tuple(self.wrong))
        object.__setattr__(self, "trap_names", tuple(self.trap_names))


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
    Token counts are estimates from text length, marked `estimated`. `think_s`
    is how long each reply takes (`oracle:think=2`): a model's time per turn, for
    measuring many attempts alive at once (`sprout bench scale`) without a server.
    """

    capabilities = REPLAYS

    def __init__(
        self,
        steps: Iterable[Step | str],
        *,
        submit_command: str = SUBMIT_COMMAND,
        think_s: float = 0.0,
    ) -> None:
        self.name = "oracle" if not think_s else f"oracle:think={_number(think_s)}"
        self.steps = as_steps(steps)
        self.submit_command = submit_command
        self.think_s = think_s

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
        seed: int | None = None,
    ) -> Completion:
        """`n` copies of the reply that plays the step `messages` call for."""
        started = time.monotonic()
        reply = self.reply(next_step(messages, self.steps))
        time.sleep(self.think_s)
        return _completion(messages, [reply] * n, started)


ErrorModel = Literal["independent", "trap"]
ERROR_MODELS: tuple[ErrorModel, ...] = ("independent", "trap")
DEFAULT_Q = 0.8
TRAP_SLIPS_P = 0.1
"""Under the trap model, the chance of an ordinary slip at each step (unless p= is given)."""


@dataclass(frozen=True)
class Noise:
    """How `oracle-noise` goes wrong: `--model oracle-noise:errors=trap,q=0.8,p=0.1,seed=3`."""

    errors: ErrorModel = "independent"
    p: float = DEFAULT_P
    """The chance of a slip at each step (a wrong variant, or the step skipped)."""
    q: float = DEFAULT_Q
    """trap only: the chance that an attempt nothing has warned falls into a task's trap."""
    seed: int = DEFAULT_SEED
    think: float = 0.0
    """Seconds each call waits before it answers, as a served model's generation would: a
    run of such calls is bound by waiting, not by this machine's cores (`sprout bench`)."""

    @property
    def name(self) -> str:
        think = f",think={_number(self.think)}" if self.think else ""
        if self.errors == "independent":
            return f"oracle-noise:p={_number(self.p)},seed={self.seed}{think}"
        trap = f"errors=trap,q={_number(self.q)},p={_number(self.p)},seed={self.seed}"
        return f"oracle-noise:{trap}{think}"


class OracleNoiseModel:
    """The oracle with seeded mistakes: a **simulation** of an actor, for exercising the loop
    without a model server. Its figures are not evidence about real models.

    Error models (`Noise.errors`):

    - ``independent``: each step it plays goes wrong with probability `p`: it plays
      one of the step's wrong variants, labelled as the step (so it believes the
      step is done), or, for a step without wrong variants, skips it (plays the next
      step's command under the next label; skipping the last step submits).
    - ``trap``: a step with a `trap` is a misconception: an attempt falls into it
      with probability `q` (it plays the trap as the step) unless its context holds
      a turn it did not write itself (a reviewer's starting turn) that names one of
      the step's `trap_names` (what the verifier names when the trap fails). The
      trap passes every visible check, so only the verifier shows it, and a fresh
      attempt, whose context holds no warning, repeats it with probability `q`.
      Other steps slip as under ``independent``, with probability `p`.

    It follows corrective turns as the oracle does (see `next_step`), and draws its
    noise for every step it plays, the one after a corrective turn included.

    Randomness: each choice uses ``random.Random(f"{seed}:{key}:{n}")``, where `key` is
    the call's `seed` (the actor names each call by its place in the rollout tree:
    task, attempt lineage, turn), or, for a call without one, a digest of the
    context's decisions; `n` numbers the `n` replies of one call. Nothing is kept
    between calls, so a resumed run, or the same run again, draws the same.
    """

    capabilities = REPLAYS

    def __init__(
        self,
        steps: Iterable[Step | str],
        *,
        noise: Noise | None = None,
        submit_command: str = SUBMIT_COMMAND,
    ) -> None:
        noise = noise or Noise()
        for name, value in (("p", noise.p), ("q", noise.q)):
            if not 0 <= value <= 1:
                raise ModelError(
                    "bad_input", f"oracle-noise: {name} must be in [0, 1], got {value}"
                )
        self.oracle = OracleModel(steps, submit_command=submit_command)
        self.steps = self.oracle.steps
        self.submit_command = submit_command
        self.noise = noise
        self.name = noise.name

    def complete(
        self,
        messages: list[Message],
        *,
        n: int = 1,
        temperature: float | None = None,
        logprobs: bool = False,
        tools: list[dict[str, Any]] | None = None,
        seed: int | None = None,
    ) -> Completion:
        """`n` replies to `messages`, each with its own draw; see the class docstring."""
        started = time.monotonic()
        time.sleep(self.noise.think)
        index = next_step(messages, self.steps)
        key = str(seed) if seed is not None else _fingerprint(messages)
        warned = _warnings(messages)
        replies = [
            self._play(index, random.Random(f"{self.noise.seed}:{key}:{draw}"), warned)
            for draw in range(n)
        ]
        return _completion(messages, replies, started)

    def _play(self, index: int, rng: random.Random, warned: str) -> str:
        if index >= len(self.steps):
            return self.oracle.reply(index)
        step = self.steps[index]
        total = len(self.steps)
        if self.noise.errors == "trap" and step.trap is not None:
            named = any(name.lower() in warned for name in step.trap_names)
            if not named and rng.random() < self.noise.q:
                return step_reply(index + 1, total, step.trap)
        if rng.random() >= self.noise.p:
            return self.oracle.reply(index)
        if step.wrong:
            return step_reply(index + 1, total, rng.choice(step.wrong))
        return self.oracle.reply(index + 1)


def _warnings(messages: list[Message]) -> str:
    """The text of the turns in `messages` that the oracle did not write (lower case)."""
    return "\n".join(
        content.lower()
        for message in messages
        if message.get("role") == "assistant"
        and isinstance(content := message.get("content"), str)
        and not (_OWN_STEP.match(content) or _OWN_DONE.match(content))
    )


def _fingerprint(messages: list[Message]) -> str:
    decisions = [m for i, m in enumerate(messages) if i < 2 or m.get("role") == "assistant"]
    canonical = json.dumps(
        decisions, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def _number(value: float) -> str:
    """`value` as the shortest text that reads back to it: 0.3, 1, 1e-05."""
    return repr(float(value)).removesuffix(".0")
