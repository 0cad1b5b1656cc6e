"""The actor: turns from a model, run in a sandbox, committed to the rollout tree."""

from sprout.agent.actor import Actor
from sprout.agent.config import ActorConfig
from sprout.agent.ending import AttemptEnded

__all__ = ["Actor", "ActorConfig", "AttemptEnded"]
