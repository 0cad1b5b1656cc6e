#!/bin/bash
set -e
cd /app
# step
cat README.md requirements.txt && ls wheels && cat src/logwatch/stats.py src/logwatch/filters.py
# step
python3 -m pip install -r requirements.txt
# wrong: python3 -m pip install clfparse==1.0.0
# trap: python3 -m pip install clfparse==1.0.0
# trap names: test_ipv6_clients_are_read
# step
python3 - <<'PY'
from pathlib import Path

path = Path("src/logwatch/stats.py")
text = path.read_text()
edits = [
    ("from collections import Counter\n", "import datetime\nfrom collections import Counter\n"),
    (
        '''    """The hour a request was made in: "YYYY-MM-DD HH:00"."""
    return record.time.strftime("%Y-%m-%d %H:00")
''',
        '''    """The UTC hour a request was made in: "YYYY-MM-DD HH:00"."""
    return record.time.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:00")
''',
    ),
]
for old, new in edits:
    assert text.count(old) == 1, f"{path}: expected one {old!r}"
    text = text.replace(old, new)
path.write_text(text)
PY
# wrong: sed -i -e 's/^from collections import Counter$/import datetime\nfrom collections import Counter/' -e 's/    return record.time.strftime/    return record.time.replace(tzinfo=datetime.UTC).strftime/' src/logwatch/stats.py
# wrong: sed -i -e 's/^from collections import Counter$/import datetime\nfrom collections import Counter/' -e 's/^    return record.time.strftime("%Y-%m-%d %H:00")$/    utc = record.time.astimezone(datetime.UTC)\n    return f"{record.time:%Y-%m-%d} {utc:%H}:00"/' src/logwatch/stats.py
# step
python3 - <<'PY'
from pathlib import Path

path = Path("src/logwatch/filters.py")
text = path.read_text()
old = '''    """Requests that failed because of the server."""
    return [record for record in records if record.status == 500]
'''
new = '''    """Requests that failed because of the server (5xx)."""
    return [record for record in records if 500 <= record.status <= 599]
'''
assert text.count(old) == 1, f"{path}: server_errors is not as expected"
path.write_text(text.replace(old, new))
PY
# wrong: sed -i 's/if record.status == 500]/if 500 <= record.status < 599]/' src/logwatch/filters.py
# wrong: sed -i 's/if record.status == 500]/if record.status in (500, 502, 503)]/' src/logwatch/filters.py
# step
python3 -m pytest -q
