"""What the tests share: helpers, constants and the bodies of fixtures that more than one
test module uses, each module of this package doing one job.

Test modules and conftest.py files import shared code from here and nowhere else (no test
module imports another, nor a conftest; tests/test_tree_layout.py checks it): a helper has
one home, and moving a test file moves nothing another file needs. A fixture defined here
is registered by the conftest.py of the folders that use it, which imports it.
"""
