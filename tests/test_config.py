"""TOML tables read one way: `FILE: TABLE.FIELD: PROBLEM`, one line, for settings and tasks."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from sprout.config import (
    changed_settings,
    only_tables,
    parse_toml,
    read_table,
    read_toml,
    validate_table,
)


class Limits(BaseModel):
    model_config = ConfigDict(extra="forbid")

    turns: int = 5
    names: list[str] = []


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "settings.toml"
    path.write_text(text)
    return path


def test_an_absent_table_is_the_defaults_and_a_present_one_is_validated(tmp_path: Path):
    assert read_table(write(tmp_path, "[other]\nx = 1\n"), "limits", Limits) == Limits()
    found = read_table(write(tmp_path, "[limits]\nturns = 9\n"), "limits", Limits)
    assert found == Limits(turns=9)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('[limits]\nturns = "many"\n', "limits.turns: Input should be a valid integer"),
        ("[limits]\ntunrs = 3\n", "limits.tunrs: Extra inputs are not permitted"),
        ("[limits]\nnames = [1]\n", "limits.names.0: Input should be a valid string"),
        ("limits = 3\n", "limits: Input should be a valid dictionary"),
    ],
)
def test_a_bad_field_is_one_line_naming_file_table_and_field(tmp_path, text, line):
    path = write(tmp_path, text)
    with pytest.raises(ValueError) as raised:
        read_table(path, "limits", Limits)
    message = str(raised.value)
    assert message.startswith(f"{path}: {line}")
    assert "\n" not in message


def test_unreadable_files_and_bad_toml_name_the_file(tmp_path: Path):
    with pytest.raises(ValueError, match=f"^{tmp_path / 'absent.toml'}: "):
        read_toml(tmp_path / "absent.toml")
    with pytest.raises(ValueError, match=r"^task\.toml: .*line 1"):
        parse_toml("[limits\n", "task.toml")


def test_a_table_found_elsewhere_is_named_as_given(tmp_path: Path):
    data = parse_toml('[repos."acme/calc"]\nturns = "x"\n', "dev.sprout.toml")
    with pytest.raises(ValueError, match=r'^dev\.sprout\.toml: repos\."acme/calc"\.turns: '):
        validate_table(
            data["repos"]["acme/calc"], Limits, path="dev.sprout.toml", table='repos."acme/calc"'
        )


def test_only_the_known_tables(tmp_path: Path):
    only_tables({"sprout": {}}, ["sprout", "repos"], "f.toml", "hint")
    with pytest.raises(ValueError, match=r"^f\.toml: network: unknown; put it in \[sprout\]$"):
        only_tables({"sprout": {}, "network": False}, ["sprout"], "f.toml", "put it in [sprout]")


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid")
    timeout: float = 60.0
    added_since: int | None = None


def test_a_resume_sees_no_change_in_a_field_added_since_the_run_began() -> None:
    stored = {"model": "m", "table": {"timeout": 30.0}}  # stored before `added_since` was
    wanted = {"model": "m", "table": _Table(timeout=30.0).model_dump(mode="json")}
    assert changed_settings(stored, wanted, {"table": _Table}) == []
    retimed = {"model": "m", "table": _Table(timeout=10.0).model_dump(mode="json")}
    assert changed_settings(stored, retimed, {"table": _Table}) == ["table"]
    gone = {"model": "m", "table": {"timeout": 30.0, "removed": 1}}
    assert changed_settings(gone, wanted, {"table": _Table}) == ["table"]
    assert changed_settings(stored, {**wanted, "model": "n"}, {"table": _Table}) == ["model"]
