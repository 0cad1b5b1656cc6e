"""sprout's tests. Their shared helpers are in `tests.support`, whose asserts pytest rewrites
as it does a test module's (registered here, before anything imports them), so that a
helper's failed assert shows its values too."""

import pytest

pytest.register_assert_rewrite("tests.support")
