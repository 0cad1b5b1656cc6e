"""mini-swe-agent's agent configs read as it reads them (`sprout run --agent-config`)."""

from sprout.integrations.minisweagent.agent_config import AgentConfigError, read_agent_config

__all__ = ["AgentConfigError", "read_agent_config"]
