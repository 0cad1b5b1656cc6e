"""Model clients behind one protocol: `complete(messages, ...) -> Completion`."""

from sprout.models.types import (
    CHAT,
    Capabilities,
    Choice,
    Completion,
    Message,
    Model,
    ModelError,
    TokenLogprob,
    TokenModel,
    ToolCall,
    capabilities,
    token_model,
)

__all__ = [
    "CHAT",
    "Capabilities",
    "Choice",
    "Completion",
    "Message",
    "Model",
    "ModelError",
    "TokenLogprob",
    "TokenModel",
    "ToolCall",
    "capabilities",
    "token_model",
]
