import pytest
from pipewright import WorkspaceError, parse

TEXT = """
[packages.app]
version = "1.0.0"
depends = { lib = ">=2" }

[packages.lib]
version = "2.1.0"
"""


def test_parse_reads_versions_and_dependencies():
    packages = parse(TEXT)
    assert list(packages) == ["app", "lib"]
    assert packages["app"].depends == {"lib": ">=2"}
    assert packages["lib"].depends == {}


def test_unknown_dependency_is_named():
    with pytest.raises(WorkspaceError, match="'nope'"):
        parse('[packages.app]\nversion = "1"\ndepends = { nope = ">=1" }\n')
