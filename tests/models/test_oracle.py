"""The oracle and the noisy oracle, driven the way the actor drives a model."""

from __future__ import annotations

import copy
import re
import time

import pytest

from sprout.models import ModelError
from sprout.models import oracle as oracle_module
from sprout.models.estimate import estimate_tokens
from sprout.models.oracle import (
    SUBMIT_COMMAND,
    Noise,
    OracleModel,
    OracleNoiseModel,
    Step,
    next_step,
    step_reply,
)
from sprout.models.oracle_spec import parse_noise_spec
from sprout.models.resolve import resolve_model

COMMANDS = ["mkdir -p out", "echo hello > out/a.txt", "cp out/a.txt out/b.txt", "ls out"]
STEPS = [Step(command) for command in COMMANDS]
START = [
    {"role": "system", "content": "You solve tasks in a shell."},
    {"role": "user", "content": "Create out/a.txt and out/b.txt."},
]
FENCE = "```"


def command_of(reply: str) -> str:
    """What the actor would run: the body of the reply's bash block."""
    match = re.search(r"```bash\n(.*)\n```", reply, re.DOTALL)
    assert match, reply
    return match.group(1)


def observe(messages: list, reply: str) -> str:
    """Append `reply` and the observation of its command, as the actor does."""
    command = command_of(reply)
    messages.append({"role": "assistant", "content": reply})
    messages.append({"role": "user", "content": f"$ {command}\n(exit 0)"})
    return command


def run_attempt(model, messages=None, limit=20) -> tuple[list[str], list]:
    """Drive `model` until it submits; the commands it ran and the final messages."""
    messages = copy.deepcopy(START) if messages is None else messages
    commands = []
    for _ in range(limit):
        command = observe(messages, model.complete(messages).text)
        commands.append(command)
        if command == model.submit_command:
            return commands, messages
    raise AssertionError(f"no submission after {limit} turns: {commands}")


def foreign(text: str) -> dict:
    return {"role": "assistant", "content": text}


def test_oracle_plays_every_step_in_order_then_submits():
    model = OracleModel(STEPS)
    assert model.name == "oracle"
    commands, messages = run_attempt(model)
    assert commands == [*COMMANDS, SUBMIT_COMMAND]
    replies = [m["content"] for m in messages if m["role"] == "assistant"]
    assert replies[0] == (
        "Following the reference solution, step 1/4.\n\n```bash\nmkdir -p out\n```"
    )
    assert replies[-1] == (
        f"Following the reference solution: all 4 steps done.\n\n```bash\n{SUBMIT_COMMAND}\n```"
    )


def test_submit_command_and_plain_string_steps():
    model = OracleModel(["true"], submit_command="submit")
    assert model.steps == (Step("true"),)
    commands, _ = run_attempt(model)
    assert commands == ["true", "submit"]
    with pytest.raises(ModelError, match="step 2: expected a Step"):
        OracleModel(["true", 3])  # type: ignore[list-item]


def test_decisions_come_from_the_context_alone():
    _, messages = run_attempt(OracleModel(STEPS))
    for cut in range(len(START), len(messages), 2):
        prefix = copy.deepcopy(messages[:cut])
        recorded = messages[cut]["content"]
        assert OracleModel(STEPS).complete(prefix).text == recorded
        assert OracleModel(STEPS).complete(copy.deepcopy(prefix)).text == recorded


def test_a_corrective_turn_that_runs_a_step_moves_past_it():
    model = OracleModel(STEPS)
    messages = copy.deepcopy(START)
    observe(messages, model.complete(messages).text)
    # The reviewer's starting turn runs step 3 (index 2), with its own spacing.
    messages.append(
        foreign(f"I will copy the file now.\n\n{FENCE}bash\ncp  out/a.txt\tout/b.txt\n{FENCE}")
    )
    messages.append({"role": "user", "content": "(exit 0)"})
    reply = model.complete(messages).text
    assert reply.startswith("Following the reference solution, step 4/4.")
    assert command_of(reply) == "ls out"


@pytest.mark.parametrize("fence", ["sh", "", "bash"])
def test_the_last_matching_shell_block_of_a_corrective_turn_wins(fence):
    turn = (
        f"{FENCE}python\nprint('ls out')\n{FENCE}\n"
        f"{FENCE}{fence}\nmkdir -p out\n{FENCE}\n"
        f"{FENCE}{fence}\necho hello > out/a.txt\n{FENCE}\n"
        f"{FENCE}{fence}\nsomething unrelated\n{FENCE}\n"
    )
    assert next_step([*START, foreign(turn)], STEPS) == 2


def test_a_corrective_turn_that_announces_a_step_is_obeyed():
    model = OracleModel(STEPS)
    _, messages = run_attempt(model)
    messages = messages[: len(START) + 6]  # steps 1-3 were played
    messages.append(foreign("Step 2 wrote the wrong text. Let me redo step 2 properly."))
    reply = model.complete(messages).text
    assert reply.startswith("Following the reference solution, step 2/4.")
    assert command_of(reply) == COMMANDS[1]
    commands, _ = run_attempt(model, messages)
    assert commands == [*COMMANDS[1:], SUBMIT_COMMAND]


def test_a_corrective_turn_with_neither_leaves_the_position_alone():
    messages = copy.deepcopy(START)
    observe(messages, OracleModel(STEPS).complete(messages).text)
    messages.append(foreign(f"Let me look around.\n\n{FENCE}bash\npwd\n{FENCE}"))
    assert next_step(messages, STEPS) == 1
    messages.append(foreign("On to step 9, which does not exist."))
    assert next_step(messages, STEPS) == 1


def noisy(steps=STEPS, **fields) -> OracleNoiseModel:
    return OracleNoiseModel(steps, noise=Noise(**fields))


def test_noise_with_p_zero_is_the_oracle():
    model = noisy(p=0, seed=7)
    assert model.name == "oracle-noise:p=0,seed=7"
    for _ in range(3):
        assert run_attempt(model) == run_attempt(OracleModel(STEPS))


def test_noise_with_p_one_skips_steps_without_wrong_variants():
    commands, messages = run_attempt(noisy(p=1))
    # Step 1 is skipped (step 2 runs), then step 3 is skipped (step 4 runs).
    assert commands == [COMMANDS[1], COMMANDS[3], SUBMIT_COMMAND]
    labels = [m["content"].split("\n")[0] for m in messages if m["role"] == "assistant"]
    assert labels[:2] == [
        "Following the reference solution, step 2/4.",
        "Following the reference solution, step 4/4.",
    ]
    assert set(COMMANDS) - set(commands) == {COMMANDS[0], COMMANDS[2]}


def test_noise_with_p_one_plays_wrong_variants():
    steps = [Step(c, wrong=(f"{c} --wrong-a", f"{c} --wrong-b")) for c in COMMANDS]
    commands, messages = run_attempt(noisy(steps, p=1, seed=3))
    assert len(commands) == len(COMMANDS) + 1
    for command, right in zip(commands, COMMANDS, strict=False):
        assert command in (f"{right} --wrong-a", f"{right} --wrong-b")
    labels = [m["content"].split("\n")[0] for m in messages if m["role"] == "assistant"]
    assert labels[:4] == [f"Following the reference solution, step {s}/4." for s in (1, 2, 3, 4)]
    assert commands[-1] == SUBMIT_COMMAND


def test_noise_is_drawn_after_a_corrective_turn_too():
    model = noisy(p=1)
    messages = copy.deepcopy(START)
    assert observe(messages, model.complete(messages).text) == COMMANDS[1]  # skipped step 1
    messages.append(foreign(f"I skipped a step.\n\n{FENCE}bash\n{COMMANDS[0]}\n{FENCE}"))
    messages.append({"role": "user", "content": "(exit 0)"})
    # The corrective turn did step 1; step 2 comes next, and with p=1 it is skipped too.
    assert command_of(model.complete(messages).text) == COMMANDS[2]


def test_a_call_seed_names_the_draw_and_nothing_is_kept_between_calls():
    steps = [Step(c, wrong=tuple(f"{c} --w{k}" for k in range(5))) for c in COMMANDS]
    model = noisy(steps, p=0.5, seed=4)
    by_seed = {seed: model.complete(START, seed=seed).text for seed in range(40)}
    assert len(set(by_seed.values())) > 1, "different call seeds never drew apart"
    fresh = noisy(steps, p=0.5, seed=4)
    assert all(fresh.complete(START, seed=s).text == text for s, text in by_seed.items())
    assert model.complete(START).text == model.complete(START).text, "no counter moves"
    other = noisy(steps, p=0.5, seed=5)
    assert any(other.complete(START, seed=s).text != t for s, t in by_seed.items())


def test_n_choices_are_draws_of_one_call():
    steps = [Step(c, wrong=(f"{c} --w1", f"{c} --w2", f"{c} --w3")) for c in COMMANDS]
    together = noisy(steps, p=0.5, seed=2).complete(START, n=6, seed=9)
    again = noisy(steps, p=0.5, seed=2).complete(START, n=6, seed=9)
    assert together.choices == again.choices
    assert len({c.text for c in together.choices}) > 1
    assert OracleModel(STEPS).complete(START, n=3).choices == (
        OracleModel(STEPS).complete(START).choices * 3
    )


TRAPPED = [
    Step(COMMANDS[0]),
    Step(COMMANDS[1], trap="echo hallo > out/a.txt", trap_names=("test_greeting", "a.txt")),
    *STEPS[2:],
]


def test_a_trap_is_fallen_into_with_probability_q_by_fresh_attempts():
    fell = [
        run_attempt_with_seed(noisy(TRAPPED, errors="trap", q=0.5, p=0), seed)[1]
        == "echo hallo > out/a.txt"
        for seed in range(60)
    ]
    assert 15 < sum(fell) < 45
    always = noisy(TRAPPED, errors="trap", q=1, p=0)
    assert run_attempt(always)[0][1] == "echo hallo > out/a.txt"
    assert run_attempt(noisy(TRAPPED, errors="trap", q=0, p=0)) == run_attempt(OracleModel(STEPS))


def test_a_turn_that_names_what_the_verifier_named_warns_an_attempt_off_the_trap():
    model = noisy(TRAPPED, errors="trap", q=1, p=0)
    messages = copy.deepcopy(START)
    observe(messages, model.complete(messages).text)
    warned = copy.deepcopy(messages)
    warned.append(foreign(f"TEST_GREETING failed last time.\n\n{FENCE}bash\nls\n{FENCE}"))
    warned.append({"role": "user", "content": "(exit 0)"})
    assert command_of(model.complete(warned).text) == COMMANDS[1]
    unrelated = copy.deepcopy(messages)
    unrelated.append(foreign(f"Something failed.\n\n{FENCE}bash\nls\n{FENCE}"))
    unrelated.append({"role": "user", "content": "(exit 0)"})
    assert command_of(model.complete(unrelated).text) == "echo hallo > out/a.txt"
    own = copy.deepcopy(messages)
    own.append({"role": "user", "content": "test_greeting is mentioned by an observation"})
    assert command_of(model.complete(own).text) == "echo hallo > out/a.txt"


def run_attempt_with_seed(model, seed: int) -> list[str]:
    messages = copy.deepcopy(START)
    commands = []
    for turn in range(20):
        command = observe(messages, model.complete(messages, seed=seed * 100 + turn).text)
        commands.append(command)
        if command == model.submit_command:
            return commands
    raise AssertionError(commands)


@pytest.mark.parametrize("model", [OracleModel(STEPS), noisy(p=0.5)])
def test_token_counts_are_estimates_and_there_are_no_logprobs(model):
    messages = [*START, {"role": "assistant", "content": None, "tool_calls": []}]
    before = time.monotonic()
    completion = model.complete(messages, n=2, logprobs=True, temperature=0.9, tools=[])
    after = time.monotonic()
    assert completion.estimated is True
    prompt = "".join(m["content"] for m in START)
    assert completion.prompt_tokens == estimate_tokens(prompt)
    assert completion.completion_tokens == sum(estimate_tokens(c.text) for c in completion.choices)
    assert all(c.logprobs is None for c in completion.choices)
    assert completion.cached_tokens is None
    # the latency is measured, not simulated: the call's own time, within the test's watch
    assert 0 < completion.latency_s <= after - before


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("oracle-noise", Noise("independent", 0.3, 0.8, 1)),
        ("oracle-noise:p=0.5", Noise("independent", 0.5, 0.8, 1)),
        ("oracle-noise:seed=9", Noise("independent", 0.3, 0.8, 9)),
        ("oracle-noise:p=1,seed=-2", Noise("independent", 1.0, 0.8, -2)),
        ("oracle-noise:seed=3, p=0", Noise("independent", 0.0, 0.8, 3)),
        ("oracle-noise:errors=trap", Noise("trap", 0.1, 0.8, 1)),
        ("oracle-noise:errors=trap,q=0.5,p=0,seed=2", Noise("trap", 0.0, 0.5, 2)),
        ("oracle-noise:errors=trap,think=2", Noise("trap", 0.1, 0.8, 1, 2.0)),
    ],
)
def test_noise_specs_parse(spec, expected):
    assert parse_noise_spec(spec) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("oracle-noise:p=2", "--model oracle-noise:p=2: p must be in [0, 1]"),
        ("oracle-noise:p=nan", "p must be in [0, 1]"),
        ("oracle-noise:p=lots", "p must be a number in [0, 1]"),
        ("oracle-noise:seed=1.5", "seed must be an integer"),
        ("oracle-noise:r=1", "unknown option 'r'"),
        ("oracle-noise:q=3", "q must be in [0, 1]"),
        ("oracle-noise:errors=often", "errors must be independent or trap"),
        ("oracle-noise:p", "p needs a value"),
        ("oracle-noise:p=0.1,", "unknown option ''"),
        ("oracle-noise:p=0.1,p=0.2", "p is given twice"),
        ("oracle-noise:think=-1", "think must be 0 to 3600 seconds"),
        ("oracle-noise:think=soon", "think must be 0 to 3600 seconds"),
    ],
)
def test_bad_noise_specs_name_the_bad_key_or_value(spec, message):
    with pytest.raises(ModelError, match=re.escape(message)) as raised:
        resolve_model(spec, steps=COMMANDS)
    assert raised.value.kind == "bad_input"


def test_think_time_is_waited_in_every_call_and_named():
    model = resolve_model("oracle-noise:think=0.2", steps=COMMANDS)
    started = time.monotonic()
    model.complete(copy.deepcopy(START))
    assert time.monotonic() - started >= 0.2
    assert model.name.endswith(",think=0.2")
    assert "think" not in resolve_model("oracle-noise", steps=COMMANDS).name


def test_oracle_specs_resolve_with_steps():
    oracle = resolve_model("oracle", steps=COMMANDS)
    assert isinstance(oracle, OracleModel)
    assert oracle.steps == tuple(STEPS)
    noisy = resolve_model("oracle-noise:p=0.25,seed=5", steps=[*STEPS[:2], "ls"])
    assert isinstance(noisy, OracleNoiseModel)
    assert noisy.name == "oracle-noise:p=0.25,seed=5"
    assert noisy.steps == (*STEPS[:2], Step("ls"))
    assert resolve_model("oracle-noise", steps=COMMANDS).name == "oracle-noise:p=0.3,seed=1"


def test_the_oracle_takes_its_think_time_for_each_reply(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(oracle_module.time, "sleep", slept.append)
    oracle = resolve_model("oracle:think=2", steps=COMMANDS)
    assert isinstance(oracle, OracleModel) and oracle.name == "oracle:think=2"
    first = oracle.complete([{"role": "user", "content": "go"}]).choices[0].text
    assert first == step_reply(1, len(COMMANDS), COMMANDS[0]) and slept == [2.0]
    assert resolve_model("oracle", steps=COMMANDS).think_s == 0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("oracle:think=soon", "think must be 0 to 3600 seconds"),
        ("oracle:think=-1", "think must be 0 to 3600 seconds"),
        ("oracle:pace=2", "unknown option 'pace'"),
        ("oracle:think", "unknown option 'think'"),
    ],
)
def test_bad_oracle_specs_name_the_bad_option(spec, message):
    with pytest.raises(ModelError, match=re.escape(f"--model {spec}: {message}")) as raised:
        resolve_model(spec, steps=COMMANDS)
    assert raised.value.kind == "bad_input"


@pytest.mark.parametrize("spec", ["oracle", "oracle:think=1", "oracle-noise:p=0.1"])
def test_oracle_specs_without_steps_say_what_is_missing(spec):
    with pytest.raises(ModelError, match=re.escape(f"--model {spec}: needs a task's")) as raised:
        resolve_model(spec)
    assert raised.value.kind == "bad_input"


def test_unknown_specs_list_the_oracles():
    with pytest.raises(ModelError, match=r"'oracle-nosie'.*oracle\[:think=SECONDS\], oracle-noise"):
        resolve_model("oracle-nosie", steps=COMMANDS)
    with pytest.raises(ModelError, match="oracle-noise"):
        noisy(p=-0.1)


def test_noise_ignores_what_observations_say():
    """Observations carry timestamps and timings; the same decisions must replay anyway."""

    def session(stamp: str) -> list[str]:
        model = noisy(p=0.5, seed=4)
        messages = copy.deepcopy(START)
        commands = []
        for _ in range(len(STEPS) + 1):
            reply = model.complete(messages).text
            commands.append(command_of(reply))
            messages.append({"role": "assistant", "content": reply})
            messages.append({"role": "user", "content": f"ran at {stamp}"})
        return commands

    assert session("10:00:01") == session("23:59:59")
