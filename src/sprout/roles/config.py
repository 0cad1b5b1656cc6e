"""The roles' settings: the `[roles]` table of a run's TOML settings file."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from sprout.config import check_template, read_table
from sprout.roles.prompts import VARIABLES


class RolesConfig(BaseModel):
    """How hard the roles try before their heuristics take over, and their prompts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_retries: int = Field(2, ge=0)
    """Retries after an invalid reply, each saying what was wrong; then the heuristic."""
    analyst_template: str | None = None
    """A Jinja source replacing the packaged analyst prompt (the same variables)."""
    reviewer_template: str | None = None
    """A Jinja source replacing the packaged reviewer prompt (the same variables)."""
    supervisor_template: str | None = None
    """A Jinja source replacing the packaged prompt of Shepherd's supervisor."""

    @field_validator("analyst_template", "reviewer_template", "supervisor_template")
    @classmethod
    def _parses(cls, source: str | None, info: ValidationInfo) -> str | None:
        assert info.field_name is not None
        return check_template(source, VARIABLES[info.field_name.removesuffix("_template")])

    @classmethod
    def from_file(cls, path: str | Path) -> RolesConfig:
        """Read the `[roles]` table of a TOML file; errors name the file and the field."""
        return read_table(path, "roles", cls)
