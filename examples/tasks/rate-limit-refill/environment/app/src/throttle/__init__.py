"""throttle: token-bucket rate limiting for API clients."""

from throttle.bucket import TokenBucket
from throttle.limiter import RateLimiter, RateLimitTimeout

__all__ = ["RateLimitTimeout", "RateLimiter", "TokenBucket"]
