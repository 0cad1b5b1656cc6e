"""The `--model` specs of the oracles, read into their settings: ``oracle[:think=S]`` and
``oracle-noise[:errors=..,p=..,q=..,seed=..,think=..]``. A bad option is one line naming
the spec and the option, told before anything runs."""

from __future__ import annotations

from typing import cast

from sprout.models.oracle import (
    DEFAULT_P,
    DEFAULT_Q,
    DEFAULT_SEED,
    ERROR_MODELS,
    TRAP_SLIPS_P,
    ErrorModel,
    Noise,
)
from sprout.models.types import ModelError


def parse_oracle_spec(spec: str) -> float:
    """The think time in seconds of ``oracle[:think=<seconds>]`` (0 without it)."""
    options = spec.removeprefix("oracle").removeprefix(":")
    if spec != "oracle" and not spec.startswith("oracle:"):
        raise ModelError("bad_input", f"--model {spec}: expected oracle[:think=<seconds>]")
    if not options:
        return 0.0
    key, equals, value = (part.strip() for part in options.partition("="))
    if key != "think" or not equals:
        raise ModelError(
            "bad_input", f"--model {spec}: unknown option {key!r}; expected think=<seconds>"
        )
    return think_seconds(spec, value)


def think_seconds(spec: str, text: str | None) -> float:
    """The `think=` option of either oracle: seconds from 0 to an hour (0 without it)."""
    try:
        seconds = float(text or 0)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= 3600:
        raise ModelError("bad_input", f"--model {spec}: think must be 0 to 3600 seconds")
    return seconds


def parse_noise_spec(spec: str) -> Noise:
    """`Noise` from ``oracle-noise[:errors=independent|trap][,p=<0..1>][,q=<0..1>][,seed=<int>]``;
    any key may be left out."""
    if spec != "oracle-noise" and not spec.startswith("oracle-noise:"):
        raise ModelError("bad_input", f"--model {spec}: expected oracle-noise[:{NOISE_OPTIONS}]")
    options = spec.removeprefix("oracle-noise").removeprefix(":")
    values: dict[str, str] = {}
    for option in options.split(",") if options else ():
        key, equals, value = (part.strip() for part in option.partition("="))
        if key not in ("errors", "p", "q", "seed", "think"):
            raise ModelError(
                "bad_input", f"--model {spec}: unknown option {key!r}; expected {NOISE_OPTIONS}"
            )
        if not equals or not value:
            raise ModelError("bad_input", f"--model {spec}: {key} needs a value, e.g. {key}=1")
        if key in values:
            raise ModelError("bad_input", f"--model {spec}: {key} is given twice")
        values[key] = value
    errors = values.get("errors", "independent")
    if errors not in ERROR_MODELS:
        raise ModelError("bad_input", f"--model {spec}: errors must be {' or '.join(ERROR_MODELS)}")
    default_p = DEFAULT_P if errors == "independent" else TRAP_SLIPS_P
    p = _probability(spec, "p", values.get("p"), default_p)
    q = _probability(spec, "q", values.get("q"), DEFAULT_Q)
    try:
        seed = int(values.get("seed", DEFAULT_SEED))
    except ValueError:
        raise ModelError("bad_input", f"--model {spec}: seed must be an integer") from None
    return Noise(cast(ErrorModel, errors), p, q, seed, think_seconds(spec, values.get("think")))


NOISE_OPTIONS = "errors=independent|trap,p=<0..1>,q=<0..1>,seed=<int>,think=<seconds>"


def _probability(spec: str, key: str, text: str | None, default: float) -> float:
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        raise ModelError("bad_input", f"--model {spec}: {key} must be a number in [0, 1]") from None
    if not 0 <= value <= 1:
        raise ModelError("bad_input", f"--model {spec}: {key} must be in [0, 1]")
    return value
