"""Hidden tests of build-order-cycles: CycleError naming the cycle, exit 3, a stable order."""

import pytest
from pipewright import build_order, load, parse, unmet
from pipewright.cli import main
from pipewright.graph import CycleError


def workspace(*packages):
    """TOML for packages given as (name, {dependency: constraint})."""
    tables = []
    for name, depends in packages:
        inline = ", ".join(f'{dep} = ">=0"' for dep in depends)
        tables.append(f'[packages.{name}]\nversion = "1.0.0"\ndepends = {{ {inline} }}\n')
    return "\n".join(tables)


def test_ready_packages_go_alphabetically():
    packages = parse(workspace(("a", ["z"]), ("b", []), ("z", [])))
    assert build_order(packages) == ["b", "z", "a"]


def test_order_does_not_depend_on_the_file():
    one = [("web", ["api", "ui"]), ("api", ["core"]), ("ui", []), ("core", [])]
    expected = ["core", "api", "ui", "web"]
    assert build_order(parse(workspace(*one))) == expected
    assert build_order(parse(workspace(*reversed(one)))) == expected


def test_the_workspace_order():
    assert build_order(load("/app/workspace.toml")) == ["core", "auth", "api", "ui", "web"]


def test_a_cycle_is_named():
    packages = parse(workspace(("a", ["b"]), ("b", ["c"]), ("c", ["b"])))
    with pytest.raises(CycleError, match="dependency cycle: b -> c -> b"):
        build_order(packages)


def test_a_package_that_depends_on_itself():
    with pytest.raises(CycleError, match="x -> x"):
        build_order(parse(workspace(("x", ["x"]))))


def test_cli_exits_3_on_a_cycle(tmp_path, capsys):
    path = tmp_path / "workspace.toml"
    path.write_text(workspace(("core", ["api"]), ("api", ["core"]), ("docs", [])))
    assert main(["order", str(path)]) == 3
    captured = capsys.readouterr()
    assert captured.err == "pipewright: dependency cycle: api -> core -> api\n"
    assert captured.out == ""


def test_caret_and_tilde_constraints():
    assert unmet(load("/app/workspace.toml")) == []
    packages = parse(
        '[packages.web]\nversion = "1.0.0"\ndepends = { core = "^1.4", ui = "~0.3" }\n'
        '[packages.core]\nversion = "2.0.0"\n[packages.ui]\nversion = "0.3.9"\n'
    )
    assert unmet(packages) == ["web needs core ^1.4, found 2.0.0"]
