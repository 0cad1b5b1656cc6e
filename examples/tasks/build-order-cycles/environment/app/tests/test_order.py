from pipewright import build_order, parse, unmet
from pipewright.cli import main


def test_dependencies_come_first():
    packages = parse(
        '[packages.app]\nversion = "1"\ndepends = { lib = ">=1" }\n'
        '[packages.lib]\nversion = "1"\ndepends = { base = ">=1" }\n'
        '[packages.base]\nversion = "1"\n'
    )
    assert build_order(packages) == ["base", "lib", "app"]


def test_unmet_constraints_are_listed():
    packages = parse(
        '[packages.app]\nversion = "1.0.0"\ndepends = { lib = ">=2.2, <3" }\n'
        '[packages.lib]\nversion = "2.1.0"\n'
    )
    assert unmet(packages) == ["app needs lib >=2.2, <3, found 2.1.0"]


def test_cli_order(tmp_path, capsys):
    path = tmp_path / "workspace.toml"
    path.write_text('[packages.one]\nversion = "1"\n')
    assert main(["order", str(path)]) == 0
    assert capsys.readouterr().out == "one\n"
