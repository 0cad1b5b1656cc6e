"""`--agent-config SPEC`: a mini-swe-agent agent config, read as mini-swe-agent reads it.

A SPEC is what mini-swe-agent's own `-c` takes: a YAML file, a `KEY.PATH=VALUE` pair,
or (sprout's addition) `mini:NAME` for a config the installed package ships
(`mini:swebench`, `mini:mini`, `mini:default`). Several are merged in order, later
ones winning, with mini-swe-agent's recursive merge. A key that no mini-swe-agent config
class accepts is refused in one line naming the spec and the key, as a typo would be;
mini-swe-agent itself ignores it silently.

The result is the actor's own config, with the protocol in `mini_swe_agent` and the
limits mini-swe-agent shares with sprout on sprout's fields: `agent.step_limit` is
`max_turns`, `agent.wall_time_limit_seconds` is `max_wall_s`,
`agent.max_consecutive_format_errors` is `max_format_errors_in_a_row`, the
environment's `timeout` is `call_timeout_s`, `model.model_kwargs.temperature` is
`temperature`. docs/integrations.md says what is not carried over.
"""

from __future__ import annotations

import json
import platform
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sprout.agent.config import ActorConfig
from sprout.agent.mini_settings import MINI_SUBMIT_SENTINEL, MiniSweAgentSettings
from sprout.errors import SproutError
from sprout.integrations.minisweagent.package import (
    CLASS_KEYS,
    bash_tool,
    config_fields,
    module_literal,
    section_keys,
    shipped_config,
    shipped_config_names,
    version,
)

PRESET = "mini:"
DEFAULT_MODEL_CLASS = "litellm"
"""mini-swe-agent's `get_model_class` without a `model_class`: LitellmModel, tool calls."""


class AgentConfigError(SproutError, ValueError):
    """A mini-swe-agent config that cannot be read: one line naming the spec and the key."""


def read_agent_config(specs: Sequence[str], base: ActorConfig | None = None) -> ActorConfig:
    """The actor's config from `specs` merged in order, over `base` (the `[actor]` table)
    for what mini-swe-agent does not set (reply temperature, log-probs, seeds, tokens)."""
    loaded = [(spec, load_spec(spec)) for spec in specs]
    for spec, config in loaded:
        check_keys(spec, config)
    merged = recursive_merge(*(config for _, config in loaded))
    return actor_config(merged, " + ".join(specs), base or ActorConfig())


def load_spec(spec: str) -> dict[str, Any]:
    """One spec as a nested dict: a shipped config, a `KEY=VALUE` pair or a YAML file."""
    if spec.startswith(PRESET):
        name = spec.removeprefix(PRESET)
        path = shipped_config(name)
        if path is None:
            names = ", ".join(shipped_config_names())
            raise AgentConfigError(
                f"{spec}: mini-swe-agent {version()} ships no config {name!r} (it ships {names})",
                input_name=spec,
            )
        return _yaml(path, spec)
    if "=" in spec and not Path(spec).exists():
        return _key_value(spec)
    return _yaml(Path(spec), spec)


def _yaml(path: Path, spec: str) -> dict[str, Any]:
    try:
        found = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise AgentConfigError(f"{spec}: {error.strerror}", input_name=spec) from None
    except yaml.YAMLError as error:
        problem = str(error).replace("\n", " ")
        raise AgentConfigError(f"{spec}: not YAML ({problem})", input_name=spec) from None
    if not isinstance(found, dict):
        raise AgentConfigError(f"{spec}: expected a mapping of sections", input_name=spec)
    return found


def _key_value(spec: str) -> dict[str, Any]:
    """`a.b=VALUE` as {"a": {"b": VALUE}}, VALUE read as JSON where it is JSON (as
    mini-swe-agent's `-c` reads it)."""
    key, _, text = spec.partition("=")
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError:
        value = text
    keys = key.split(".")
    if any(not part for part in keys):
        raise AgentConfigError(f"{spec}: empty key in {key!r}", input_name=spec)
    for part in reversed(keys):
        value = {part: value}
    return dict(value)


def check_keys(spec: str, config: dict[str, Any]) -> None:
    """Refuse a section or key no mini-swe-agent config class accepts."""
    sections = [*sorted(CLASS_KEYS), "run"]
    for section, values in config.items():
        if section not in sections:
            raise AgentConfigError(
                f"{spec}: {section}: not a section of a mini-swe-agent config "
                f"(it has {', '.join(sections)})",
                input_name=f"{spec}: {section}",
            )
        if not isinstance(values, dict):
            raise AgentConfigError(f"{spec}: {section}: expected a mapping", input_name=spec)
        known = section_keys(section)
        for key in values:
            if key not in known:
                raise AgentConfigError(
                    f"{spec}: {section}.{key}: not a key mini-swe-agent "
                    f"{version()} reads in {section} (a typo?)",
                    input_name=f"{spec}: {section}.{key}",
                )


def recursive_merge(*configs: dict[str, Any]) -> dict[str, Any]:
    """mini-swe-agent's merge: later values win; mappings merge key by key."""
    merged: dict[str, Any] = {}
    for config in configs:
        for key, value in config.items():
            if isinstance(merged.get(key), dict) and isinstance(value, dict):
                merged[key] = recursive_merge(merged[key], value)
            else:
                merged[key] = value
    return merged


class _UsedKeys(BaseModel):
    """The keys whose values sprout acts on, checked as mini-swe-agent's classes type them."""

    model_config = ConfigDict(extra="ignore")

    system_template: str
    instance_template: str
    observation_template: str
    format_error_template: str
    action_regex: str | None = None
    step_limit: int = Field(0, ge=0)
    cost_limit: float = 3.0
    wall_time_limit_seconds: int = Field(0, ge=0)
    max_consecutive_format_errors: int = Field(3, ge=0)
    timeout: float = Field(30, gt=0)
    cwd: str = ""
    env: dict[str, str] = Field(default_factory=dict)

    @field_validator("action_regex")
    @classmethod
    def _compiles(cls, regex: str | None) -> str | None:
        if regex is not None:
            try:
                re.compile(regex)
            except re.error as error:  # not a ValueError: pydantic would let it escape
                raise ValueError(f"{regex!r} is not a regular expression ({error})") from None
        return regex

    @field_validator("env")
    @classmethod
    def _names(cls, env: dict[str, str]) -> dict[str, str]:
        for name in env:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(f"{name!r} is not a variable name")
        return env


def model_defaults(model_class: str, source: str) -> dict[str, Any]:
    """The defaults of the config class of `model_class` (a short name of mini-swe-agent's
    or its dotted path), refusing the classes sprout cannot speak for."""
    mapping = module_literal("models/__init__.py", "_MODEL_CLASS_MAPPING")
    path = str(mapping.get(model_class, model_class))
    module, _, name = path.rpartition(".")
    if not module.startswith("minisweagent.models.") or "Response" in name or "test_" in module:
        raise AgentConfigError(
            f"{source}: model.model_class {model_class!r}: sprout speaks chat completions with "
            "mini-swe-agent's own classes: litellm (tool calls) or litellm_textbased "
            "(action_regex), or their openrouter, portkey and requesty kin",
            input_name=f"{source}: model.model_class",
        )
    relative = module.removeprefix("minisweagent.").replace(".", "/") + ".py"
    defaults = config_fields(relative, f"{name}Config")
    return {key: value for key, value in defaults.items() if value is not ...}


def actor_config(config: dict[str, Any], source: str, base: ActorConfig) -> ActorConfig:
    """`base` speaking the protocol of mini-swe-agent config `config`."""
    agent = {k: v for k, v in config.get("agent", {}).items() if k != "agent_class"}
    environment = dict(config.get("environment", {}))
    environment.pop("environment_class", None)
    model = dict(config.get("model", {}))
    defaults = model_defaults(str(model.pop("model_class", "") or DEFAULT_MODEL_CLASS), source)
    model = defaults | model
    agent = config_fields("agents/default.py", "AgentConfig") | agent
    agent = {k: v for k, v in agent.items() if v is not ...}
    used = _checked({"agent": agent, "environment": environment, "model": model}, source)
    text_based = "action_regex" in defaults
    kwargs = model.get("model_kwargs") or {}
    mini = MiniSweAgentSettings(
        system_template=used.system_template,
        instance_template=used.instance_template,
        observation_template=used.observation_template,
        format_error_template=used.format_error_template,
        action_regex=used.action_regex if text_based else None,
        bash_tool=None if text_based else bash_tool(),
        cwd=used.cwd,
        env=used.env,
        max_consecutive_format_errors=used.max_consecutive_format_errors,
        cost_limit=used.cost_limit,
        template_vars=recursive_merge(
            _json(agent), _json(environment) | platform.uname()._asdict(), _json(model)
        ),
        source=source,
    )
    update: dict[str, Any] = {
        "mini_swe_agent": mini,
        "call_format": "bash_blocks" if text_based else "tool_calls",
        "submit_sentinel": MINI_SUBMIT_SENTINEL,
        "call_timeout_s": used.timeout,
        "max_wall_s": used.wall_time_limit_seconds or None,
        "max_format_errors_in_a_row": used.max_consecutive_format_errors or None,
    }
    if text_based:
        update["max_calls_per_turn"] = 1
    if used.step_limit:
        update["max_turns"] = used.step_limit
    if isinstance(kwargs, dict) and isinstance(kwargs.get("temperature"), int | float):
        update["temperature"] = float(kwargs["temperature"])
    return base.model_copy(update=update)


def _checked(sections: dict[str, dict[str, Any]], source: str) -> _UsedKeys:
    """The keys sprout acts on, from the config's `sections`; an error names the section and
    key it is about (a required key that is missing is the agent's: its templates)."""
    try:
        return _UsedKeys.model_validate(
            {k: v for keys in sections.values() for k, v in keys.items()}
        )
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        key = str(first["loc"][0])
        section = next((name for name, keys in sections.items() if key in keys), "agent")
        raise AgentConfigError(
            f"{source}: {section}.{field}: {first['msg']}", input_name=f"{source}: {field}"
        ) from None


def _json(values: dict[str, Any]) -> dict[str, Any]:
    """`values` as JSON keeps them (a run stores its settings as JSON)."""
    return dict(json.loads(json.dumps(values, default=str)))
