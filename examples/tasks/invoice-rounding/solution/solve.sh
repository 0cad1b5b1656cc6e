#!/bin/bash
set -e
cd /app
# step
cat README.md requirements.txt && ls wheels && cat src/invoicer/totals.py src/invoicer/models.py
# step
python3 -m pip install -r requirements.txt
# wrong: python3 -m pip install minorunits
# trap: python3 -m pip install minorunits
# trap names: test_lower_case_currency_codes_from_the_export
# step
python3 - <<'PY'
from pathlib import Path

path = Path("src/invoicer/totals.py")
text = path.read_text()
edits = [
    ("from decimal import Decimal\n", "from decimal import ROUND_HALF_UP, Decimal\n\nimport minorunits\n"),
    (
        "    return round(amount, 2)\n",
        "    return Decimal(amount).quantize(minorunits.quantum(currency), rounding=ROUND_HALF_UP)\n",
    ),
]
for old, new in edits:
    assert text.count(old) == 1, f"{path}: expected one {old!r}"
    text = text.replace(old, new)
path.write_text(text)
PY
# wrong: sed -i -e 's/^from decimal import Decimal$/from decimal import ROUND_HALF_EVEN, Decimal\n\nimport minorunits/' -e 's/return round(amount, 2)/return Decimal(amount).quantize(minorunits.quantum(currency), rounding=ROUND_HALF_EVEN)/' src/invoicer/totals.py
# wrong: sed -i -e 's/^from decimal import Decimal$/from decimal import ROUND_HALF_UP, Decimal/' -e 's/return round(amount, 2)/return Decimal(amount).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)/' src/invoicer/totals.py
# step
python3 - <<'PY'
from pathlib import Path

path = Path("src/invoicer/models.py")
text = path.read_text()
edits = [
    ("data = json.loads(text)", "data = json.loads(text, parse_float=Decimal)"),
    ('unit_price=float(raw["unit_price"])', 'unit_price=Decimal(str(raw["unit_price"]))'),
    ('tax_rate=float(data.get("tax_rate", 0))', 'tax_rate=Decimal(str(data.get("tax_rate", 0)))'),
]
for old, new in edits:
    assert text.count(old) == 1, f"{path}: expected one {old!r}"
    text = text.replace(old, new)
path.write_text(text)
PY
# wrong: sed -i 's/=float(/=Decimal(/' src/invoicer/models.py
# step
python3 -m pytest -q
