"""The analyst and the reviewer: prompts, structured-output parsing, validation, heuristics.

The roles read the rollout tree and record analyses and reviews through its verbs;
they never write turns. The only thing a schedule passes from them to the actor
is a plan's starting turn.
"""

from sprout.roles.analyst import Analyst
from sprout.roles.config import RolesConfig
from sprout.roles.heuristics import candidate_boundaries
from sprout.roles.reviewer import Reviewer
from sprout.roles.types import Analysis, BranchPlan, Review, RoleError

__all__ = [
    "Analysis",
    "Analyst",
    "BranchPlan",
    "Review",
    "Reviewer",
    "RoleError",
    "RolesConfig",
    "candidate_boundaries",
]
