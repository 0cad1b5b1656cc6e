"""The harness's own tables of a task.toml, as Harbor writes them: `[environment]` (cpus,
memory, storage) and the `timeout_sec` and `user` of `[agent]` and `[verifier]`, the
network each phase gets (`network_mode` with its `allowed_hosts`, `allow_internet`), and
the variables of `[environment]`, `[verifier]` and `[solution]` (`env`).

Each table is a model of the fields sprout reads, typed and bounded, read as every table
is (`sprout.config.validate_table`: a bad value is one line, `FILE: TABLE.FIELD: PROBLEM`).
Unlike `[sprout]`, they ignore the fields sprout does not read: Harbor adds fields over
time (`build_timeout_sec`, `gpus`, ...), and a task
written for a newer Harbor must still load.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool

from sprout.sandbox import AllowedHost, Network

PositiveNumber = Annotated[float, Field(gt=0, allow_inf_nan=False, strict=True)]
"""A finite number above 0; `strict` refuses `true` and "60", which are no numbers."""

SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def _size_in_bytes(value: object) -> object:
    """Terminal-Bench's `"2G"`, `"512M"` or `"1.5GiB"` as bytes; a number as it is (bytes)."""
    if not isinstance(value, str):
        return value
    text = value.strip().lower().removesuffix("b").removesuffix("i")
    number, unit = (text[:-1], text[-1:]) if text[-1:] in SIZE_UNITS else (text, "")
    try:
        return float(number) * SIZE_UNITS[unit]
    except ValueError:
        raise ValueError(f'expected a size such as "2G" or "512M", got {value!r}') from None


Size = Annotated[PositiveNumber, BeforeValidator(_size_in_bytes)]
"""Bytes, written as a number or as a size with a unit."""


def _uid_as_text(value: object) -> object:
    """A uid written as a number (`user = 1000`; Harbor takes a name or an id) as its text."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"expected a user name or a uid of 0 or more, got {value}")
        return str(value)
    return value


UserSpec = Annotated[str, Field(min_length=1, strict=True), BeforeValidator(_uid_as_text)]
"""A user as `docker exec --user` takes it: `name`, `uid`, `name:group` or `uid:gid`."""


NetworkMode = Literal["public", "no-network", "allowlist"]
"""Harbor's network modes (sprout's `public`, `none` and `allowlist`)."""


def _allowed_host(entry: str) -> str:
    AllowedHost.parse(entry)
    return entry


AllowedHosts = list[Annotated[str, Field(strict=True), AfterValidator(_allowed_host)]]
"""An allow-list's hosts: `name`, `*.domain` or an IPv4 address, each with an optional
`:port` (sandbox/network/policy.py)."""


def _variable_name(name: str) -> str:
    if not name or "=" in name or "\0" in name:
        raise ValueError(f"{name!r} is no variable name (empty, or with '=' or a NUL byte)")
    return name


def _no_nul(value: str) -> str:
    if "\0" in value:
        raise ValueError("a variable's value cannot hold a NUL byte")
    return value


EnvTable = dict[
    Annotated[str, AfterValidator(_variable_name)],
    Annotated[str, Field(strict=True), AfterValidator(_no_nul)],
]
"""A table's variables, name to value (`env = { API_KEY = "${OPENAI_API_KEY}" }`)."""


class PhaseTable(BaseModel):
    """Harbor's `[agent]` or `[verifier]` table: sprout reads its `timeout_sec`, `user` and
    `network_mode`."""

    model_config = ConfigDict(extra="ignore")

    timeout_sec: PositiveNumber | None = None
    """Seconds the agent (or the verifier) may take; None: sprout's default."""
    user: UserSpec | None = None
    """Who the phase's commands run as, resolved through the image's /etc/passwd; None: the
    Dockerfile's final USER, as Harbor runs them as the container's default user."""
    network_mode: NetworkMode | None = None
    """The phase's network; None: `[environment]`'s."""
    allowed_hosts: AllowedHosts | None = None
    """What its `allowlist` reaches; None: `[environment]`'s (none at all when that has
    none either, as Harbor denies all egress then)."""


class VerifierTable(PhaseTable):
    """Harbor's `[verifier]` table: a phase's fields, and the verifier's own variables."""

    env: EnvTable = {}


class SolutionTable(BaseModel):
    """Harbor's `[solution]` table: the reference solution's variables."""

    model_config = ConfigDict(extra="ignore")

    env: EnvTable = {}


class EnvironmentTable(BaseModel):
    """Harbor's `[environment]` table: the limits of the agent's sandbox (None: the
    sandbox's defaults). Harbor writes `memory_mb` and `storage_mb`, Terminal-Bench
    `memory = "2G"` and `storage = "10G"`; the megabytes win where both are set."""

    model_config = ConfigDict(extra="ignore")

    cpus: PositiveNumber | None = None
    memory_mb: PositiveNumber | None = None
    storage_mb: PositiveNumber | None = None
    memory: Size | None = None
    storage: Size | None = None
    network_mode: NetworkMode | None = None
    """The network of the agent and the verifier where their tables set none (set-up has
    the network, as `docker build` does, unless `[sprout] setup_network` narrows it)."""
    allowed_hosts: AllowedHosts | None = None
    allow_internet: StrictBool | None = None
    """Harbor's older spelling: false is `no-network`."""
    docker_image: Annotated[str, Field(min_length=1, strict=True)] | None = None
    """The task's environment, prebuilt (Terminal-Bench 2 names one for every task):
    Harbor runs it instead of building the Dockerfile."""
    env: EnvTable = {}
    """Variables of the task's container: the agent's calls and the verifier see them; the
    set-up steps do not (Harbor sets them when the container starts, after the build)."""

    @property
    def network(self) -> NetworkMode:
        if self.network_mode is not None:
            return self.network_mode
        return "no-network" if self.allow_internet is False else "public"

    @property
    def memory_bytes(self) -> int | None:
        """Memory of the agent's sandbox."""
        return _bytes(self.memory_mb, self.memory)

    @property
    def disk_bytes(self) -> int | None:
        """Bytes the agent may write."""
        return _bytes(self.storage_mb, self.storage)


def _bytes(megabytes: float | None, size: float | None) -> int | None:
    if megabytes is not None:
        return int(megabytes * 1024**2)
    return int(size) if size is not None else None


def network_of(mode: NetworkMode, hosts: list[str] | None) -> Network:
    """A Harbor network mode (and an allowlist's hosts) as a sandbox's `network`."""
    if mode == "allowlist":
        return tuple(hosts or ())
    return mode == "public"


def phase_networks(
    environment: EnvironmentTable, agent: PhaseTable, verifier: PhaseTable
) -> dict[str, Network]:
    """The Task's `network` (the agent's) and `verifier_network`, each from its phase's
    `network_mode`, else `[environment]`'s; an allowlist's hosts come from the same table
    as its mode, else from `[environment]`."""

    def of(phase: PhaseTable) -> Network:
        hosts = phase.allowed_hosts
        return network_of(
            phase.network_mode or environment.network,
            environment.allowed_hosts if hosts is None else hosts,
        )

    return {"network": of(agent), "verifier_network": of(verifier)}
