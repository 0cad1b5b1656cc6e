import shutil

from stockroom.cli import main


def test_list_prints_the_stock_table(tmp_path, capsys):
    path = shutil.copy("data/inventory.json", tmp_path / "inventory.json")
    assert main([str(path), "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "SKU    Name              Qty  Location"
    assert lines[1] == "-----  ----------------  ---  --------"
    assert lines[2] == "A-100  Hex bolt M6       40   B2"
    assert len(lines) == 7


def test_adjust_saves_the_change(tmp_path, capsys):
    path = shutil.copy("data/inventory.json", tmp_path / "inventory.json")
    assert main([str(path), "adjust", "C-007", "6"]) == 0
    assert "C-007  Wood glue 500 ml  6" in capsys.readouterr().out
    assert main([str(path), "adjust", "C-007", "-7"]) == 2
