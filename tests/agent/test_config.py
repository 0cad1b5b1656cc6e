"""ActorConfig from a TOML file: overrides reach the prompts; bad input names file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from sprout.agent import Actor, ActorConfig
from sprout.sandbox import LayerStore, SandboxWorkspace
from sprout.tree import RolloutTree
from tests.support.scripted_model import ScriptedModel, bash

CUSTOM = """
[actor]
max_turns = 7
submit_sentinel = "FINISHED_OK"
call_format = "tool_calls"

[actor.templates]
system = "Custom system for {{ workdir }}; print {{ submit_sentinel }} when done."
observation = "{% for call in calls %}rc={{ call.exit_code }} out={{ call.output }}{% endfor %}"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sprout.toml"
    path.write_text(text)
    return path


def prefix_of(config: ActorConfig, tmp_path: Path) -> list[dict]:
    tree = RolloutTree(tmp_path / "sprout.db")
    layers = LayerStore(tmp_path / "layers", mode="copy")
    actor = Actor(ScriptedModel([]), tree, SandboxWorkspace(layers), config)
    return actor.prefix("Make the tests pass.", "/repo")


def test_the_actor_table_overrides_defaults_and_templates(tmp_path):
    config = ActorConfig.from_file(write(tmp_path, CUSTOM))
    assert config.max_turns == 7
    assert config.submit_sentinel == "FINISHED_OK"
    assert config.call_format == "tool_calls"
    assert config.max_calls_per_turn == ActorConfig().max_calls_per_turn

    system, instance = prefix_of(config, tmp_path)
    assert system == {
        "role": "system",
        "content": "Custom system for /repo; print FINISHED_OK when done.",
    }
    # templates not overridden keep the packaged text
    assert instance["content"].startswith("Make the tests pass.")
    assert "/repo" in instance["content"]


def test_a_file_without_an_actor_table_gives_the_defaults(tmp_path):
    assert ActorConfig.from_file(write(tmp_path, "[other]\nx = 1\n")) == ActorConfig()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("[actor]\nmax_turns = 0\n", "actor.max_turns"),
        ('[actor]\nmax_turns = "many"\n', "actor.max_turns"),
        ('[actor]\ncall_format = "xml"\n', "actor.call_format"),
        ("[actor]\ncolour = 1\n", "actor.colour"),
        ("[actor]\ncall_timeout_s = -1\n", "actor.call_timeout_s"),
        ("[actor.templates]\nsystem = 3\n", "actor.templates.system"),
    ],
)
def test_a_bad_field_names_the_file_and_the_field(tmp_path, body, field):
    path = write(tmp_path, body)
    with pytest.raises(ValueError) as raised:
        ActorConfig.from_file(path)
    assert str(path) in str(raised.value)
    assert field in str(raised.value)


def test_a_misspelt_template_name_is_refused(tmp_path):
    """`templates` takes only the names the actor renders; a typo would silently keep the
    packaged prompt, which is exactly what the user tried to replace."""
    path = write(tmp_path, '[actor.templates]\nsytem = "You are terse."\n')
    with pytest.raises(ValueError) as raised:
        ActorConfig.from_file(path)
    assert str(path) in str(raised.value)
    assert "actor.templates" in str(raised.value)
    assert "sytem" in str(raised.value)


def test_a_template_that_does_not_parse_is_refused_when_loading(tmp_path):
    """A Jinja syntax error is bad input in the file, not a crash at the first turn."""
    path = write(tmp_path, '[actor.templates]\nsystem = "In {{ workdir "\n')
    with pytest.raises(ValueError) as raised:
        ActorConfig.from_file(path)
    assert str(path) in str(raised.value)
    assert "actor.templates.system" in str(raised.value)


@pytest.mark.parametrize(
    ("table", "load"),
    [
        ('[actor.templates]\ninstance = "{{ instructions }} in {{ workdir }}"\n', "actor"),
        ('[roles]\nreviewer_template = "{{ candidate }}"\n', "roles"),
    ],
)
def test_a_template_naming_a_variable_it_is_not_given_is_refused_when_loading(
    tmp_path, table, load
):
    """An undefined name would only fail at the first prompt of a run, after set-up."""
    from sprout.roles import RolesConfig

    path = write(tmp_path, table)
    config = ActorConfig if load == "actor" else RolesConfig
    with pytest.raises(ValueError) as raised:
        config.from_file(path)
    message = str(raised.value)
    assert str(path) in message and "undefined variable" in message
    assert "instructions" in message or "candidate" in message
    assert "\n" not in message


def test_the_packaged_templates_name_only_what_they_are_given():
    """The declared variables are what user templates are checked against: they must
    cover every packaged template."""
    import jinja2
    import jinja2.meta

    from sprout.agent import prompts as actor_prompts
    from sprout.roles import prompts as role_prompts

    for module in (actor_prompts, role_prompts):
        environment = jinja2.Environment(loader=jinja2.FileSystemLoader(module.TEMPLATES))
        for name, given in module.VARIABLES.items():
            source = (module.TEMPLATES / f"{name}.j2").read_text()
            names = jinja2.meta.find_undeclared_variables(environment.parse(source))
            assert names <= given, (name, names - given)


def test_unreadable_toml_and_missing_files_name_the_file(tmp_path):
    broken = write(tmp_path, "[actor\nmax_turns = 3\n")
    with pytest.raises(ValueError, match=str(broken)):
        ActorConfig.from_file(broken)
    missing = tmp_path / "nope.toml"
    with pytest.raises(ValueError, match=str(missing)):
        ActorConfig.from_file(missing)


@pytest.mark.sandbox
def test_file_settings_drive_a_real_attempt(world, tmp_path):
    text = """
[actor]
submit_sentinel = "FINISHED_OK"
[actor.templates]
system = "Terse system; finish with {{ submit_sentinel }}."
observation = "{% for call in calls %}rc={{ call.exit_code }} out={{ call.output }}{% endfor %}"
"""
    config = ActorConfig.from_file(write(tmp_path, text))
    model = ScriptedModel([bash("printf hi"), bash("echo SPROUT_SUBMIT"), bash("echo FINISHED_OK")])
    actor = world.actor(model, config)
    attempt = actor.run(world.root(actor))

    assert attempt.status == "submitted"
    assert model.seen[0][0]["content"] == "Terse system; finish with FINISHED_OK."
    assert model.seen[1][-1] == {"role": "user", "content": "rc=0 out=hi"}
    assert len(world.tree.own_turns(attempt)) == 3
