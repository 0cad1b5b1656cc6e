"""The actor: turns from a model, run in a sandbox, committed to the rollout tree."""

from sprout.agent.actor import Actor, AttemptEnded
from sprout.agent.config import ActorConfig

__all__ = ["Actor", "ActorConfig", "AttemptEnded"]
