"""The harness's own tables of a task.toml, as Harbor reads them: `[environment]` (cpus,
memory, storage) and the `timeout_sec` of `[agent]` and `[verifier]`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sprout.task import TaskError


def harness_timeout(data: dict[str, object], table: str, path: Path, task_id: str) -> float | None:
    """`[TABLE] timeout_sec` (TABLE: `agent`, `verifier`), None when unset."""
    section = data.get(table, {})
    value = section.get("timeout_sec") if isinstance(section, dict) else None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise TaskError(f"{task_id}: {path}: {table}.timeout_sec: expected a positive number")
    return float(value)


SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


@dataclass(frozen=True)
class Resources:
    """What the harness's `[environment]` table asks for the agent's sandbox."""

    cpus: float | None = None
    memory_bytes: int | None = None
    disk_bytes: int | None = None


def _size(value: object, field: str, megabytes: bool) -> int:
    """`memory_mb = 2048`, or `memory = "2G"` / `"512M"` / a number of bytes."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value * 1024**2 if megabytes else value
    if isinstance(value, float) and value > 0:
        return int(value * 1024**2 if megabytes else value)
    if isinstance(value, str) and not megabytes:
        text = value.strip().lower().removesuffix("b").removesuffix("i")
        number, unit = (text[:-1], text[-1]) if text[-1:] in SIZE_UNITS else (text, "")
        try:
            amount = float(number)
        except ValueError:
            amount = -1
        if amount > 0:
            return int(amount * SIZE_UNITS[unit])
    wanted = "a positive number of megabytes" if megabytes else 'a size such as "2G" or "512M"'
    raise ValueError(f"{field}: expected {wanted}, got {value!r}")


def read_resources(data: dict[str, object], path: Path, task_id: str) -> Resources:
    """The `[environment]` table's cpus, memory and storage (Harbor's `memory_mb` and
    `storage_mb`, or Terminal-Bench's `memory = "2G"` and `storage = "10G"`)."""
    table = data.get("environment", {})
    if not isinstance(table, dict):
        raise TaskError(f"{task_id}: {path}: environment: expected a table")
    try:
        cpus = table.get("cpus")
        if cpus is not None and (
            isinstance(cpus, bool) or not isinstance(cpus, int | float) or cpus <= 0
        ):
            raise ValueError(f"environment.cpus: expected a positive number, got {cpus!r}")
        sizes: dict[str, int | None] = {}
        for name in ("memory", "storage"):
            if f"{name}_mb" in table:
                sizes[name] = _size(table[f"{name}_mb"], f"environment.{name}_mb", True)
            elif name in table:
                sizes[name] = _size(table[name], f"environment.{name}", False)
            else:
                sizes[name] = None
    except ValueError as error:
        raise TaskError(f"{task_id}: {path}: {error}") from None
    return Resources(float(cpus) if cpus is not None else None, sizes["memory"], sizes["storage"])
