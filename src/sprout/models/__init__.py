"""Model clients behind one protocol: `complete(messages, ...) -> Completion`."""

from sprout.models.types import (
    Choice,
    Completion,
    Message,
    Model,
    ModelError,
    TokenLogprob,
    TokenModel,
    ToolCall,
    token_model,
)

__all__ = [
    "Choice",
    "Completion",
    "Message",
    "Model",
    "ModelError",
    "TokenLogprob",
    "TokenModel",
    "ToolCall",
    "token_model",
]
