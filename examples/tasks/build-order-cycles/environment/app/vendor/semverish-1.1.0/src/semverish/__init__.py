"""semverish: semantic versions and the constraints packages put on them."""

from semverish.constraints import ConstraintError, satisfies
from semverish.version import Version

__version__ = "1.1.0"
__all__ = ["ConstraintError", "Version", "satisfies"]
