"""mini-swe-agent's agent configs read as it reads them (`sprout run --agent-config`),
its trajectories adopted as attempts (`--from-trajectories`), and sprout's sandbox as its
environment (`environment.SproutEnvironment`, imported by mini-swe-agent by its path:
importing it imports mini-swe-agent)."""

from sprout.integrations.minisweagent.agent_config import AgentConfigError, read_agent_config

__all__ = ["AgentConfigError", "read_agent_config"]
