"""One base for sprout's errors: the command line and the runner catch `SproutError`, so an
error class that does not derive from it would surface as a traceback (a "bug of sprout's")
instead of its one line and exit code 2."""

from __future__ import annotations

import ast
import importlib

import pytest

from sprout.cli import main
from sprout.errors import BAD_INPUT, SproutError
from tests.support.repo_paths import SPROUT_SOURCE

SIGNALS = {
    "sprout.agent.ending.AttemptEnded",
    "sprout.agent.ending.Interrupted",
    "sprout.agent.parse.FormatError",
    "sprout.agent.mini_dialect.MiniFormatError",
    "sprout.models.retrying.Retryable",
    "sprout.roles.ask.Refused",
    "sprout.search.halt.Halted",
}
"""Exceptions that steer control flow inside sprout (the reply is told back to the model, a
call is retried, a role falls back, a run halts): never shown to a user as an error."""


def exception_classes() -> list[str]:
    """Every class in src/sprout whose name or bases say it is an exception."""
    found = []
    for path in sorted(SPROUT_SOURCE.rglob("*.py")):
        module = ".".join(path.relative_to(SPROUT_SOURCE.parent).with_suffix("").parts)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(base) for base in node.bases}
                if any(b.endswith(("Error", "Exception", "Failed", "Unavailable")) for b in bases):
                    found.append(f"{module}.{node.name}")
    return found


def declared_bases(name: str) -> set[str]:
    """The bases class `name` is written with, read from its source."""
    module, _, attribute = name.rpartition(".")
    path = SPROUT_SOURCE.parent.joinpath(*module.split(".")).with_suffix(".py")
    [node] = [
        n
        for n in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(n, ast.ClassDef) and n.name == attribute
    ]
    return {ast.unparse(base) for base in node.bases}


@pytest.mark.parametrize("name", exception_classes())
def test_every_error_derives_from_the_one_base(name: str):
    module, _, attribute = name.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), attribute)
    except ModuleNotFoundError as missing:  # a module of another interpreter (Harbor: 3.12+)
        assert missing.name is not None and not missing.name.startswith("sprout"), missing
        assert "SproutError" in declared_bases(name), f"{name} does not derive from SproutError"
        return
    if name in SIGNALS:
        assert not issubclass(cls, SproutError), f"{name} is control flow, not an error"
    else:
        assert issubclass(cls, SproutError), f"{name} does not derive from SproutError"


def test_the_scan_finds_the_errors():
    names = exception_classes()
    assert "sprout.sandbox.errors.BadArgument" in names and set(names) >= SIGNALS
    assert len(names) > 40


def test_an_error_of_any_layer_ends_a_command_with_its_one_line(tmp_path, capsys):
    """A learner's bad configuration (`train step --config`), a run folder that is not one
    (`export`): each ends in one line naming the input, and exit code 2."""
    config = tmp_path / "learner.toml"
    config.write_text("[learner]\nlr = 'fast'\n")
    step = ["train", "step", "--config", str(config), "--samples", "x", "--model", "m"]
    assert main([*step, "--out", str(tmp_path / "out")]) == BAD_INPUT
    first = capsys.readouterr().err
    assert first.startswith("sprout train step: ") and first.count("\n") == 1
    export = ["export", str(tmp_path / "nothing"), "--format", "jsonl"]
    assert main([*export, "--out", str(tmp_path / "o.jsonl")]) == BAD_INPUT
    second = capsys.readouterr().err
    assert str(tmp_path / "nothing") in second and second.count("\n") == 1


def test_an_error_carries_the_input_it_names_apart_from_its_line():
    """A program reading an error (a wrapper, a test) finds the input at fault without
    parsing the line: given, or the line's lead by the `INPUT: PROBLEM` convention; and it
    survives pickling, as a Ray node ships an error to the driver."""
    import pickle

    from sprout.models import ModelError
    from sprout.sandbox import BadArgument
    from sprout.task import TaskError

    given = BadArgument("limits.memory_bytes", "expected a non-negative int")
    assert given.input_name == "limits.memory_bytes"
    assert str(given) == "limits.memory_bytes: expected a non-negative int"
    derived = TaskError("tasks/t1/task.toml: sprout.workdir: 'x' is not absolute")
    assert derived.input_name == "tasks/t1/task.toml"
    assert SproutError("the run was interrupted").input_name is None
    shipped = pickle.loads(pickle.dumps(given))
    assert isinstance(shipped, BadArgument) and shipped.input_name == "limits.memory_bytes"
    assert str(shipped) == str(given)
    server = pickle.loads(pickle.dumps(ModelError("server", "http://127.0.0.1:9: refused")))
    assert (server.kind, server.input_name) == ("server", "http://127.0.0.1:9")


def test_the_cli_error_of_a_bad_folder_names_that_folder(tmp_path):
    """`sprout export` of a folder that is no run: the error that ends the command carries
    the folder as its input."""
    from sprout.cli import build_parser

    folder = str(tmp_path / "nothing")
    args = build_parser().parse_args(["export", folder, "--format", "jsonl", "--out", "x.jsonl"])
    with pytest.raises(SproutError) as caught:
        args.func(args)
    assert caught.value.input_name == folder
