#!/bin/bash
set -e
cd /app
# step
cat README.md requirements.txt && ls wheels && cat src/tocgen/headings.py src/tocgen/anchors.py
# step
python3 -m pip install -r requirements.txt
# wrong: python3 -m pip install wheels/mdblocks-0.5.0-py3-none-any.whl
# trap: python3 -m pip install wheels/mdblocks-0.5.0-py3-none-any.whl
# trap names: test_tilde_fences_are_code
# step
python3 - <<'PY'
from pathlib import Path

path = Path("src/tocgen/headings.py")
text = path.read_text()
edits = [
    ("import re\nfrom dataclasses import dataclass\n", "from dataclasses import dataclass\n\nimport mdblocks\n"),
    ('HEADING = re.compile(r"^ {0,3}(#{1,6})[ \\t]+(.*?)(?:[ \\t]+#+)?[ \\t]*$")\n\n\n', ""),
    (
        '''    """Every ATX heading (`## Title`) of a Markdown document, in order."""
    headings = []
    for number, line in enumerate(text.splitlines(), 1):
        match = HEADING.match(line)
        if match:
            headings.append(Heading(len(match.group(1)), match.group(2), number))
    return headings
''',
        '''    """Every ATX heading (`## Title`) of a Markdown document, in order; lines in code
    blocks are code, whatever they start with, so mdblocks reads the document."""
    return [
        Heading(block.level, block.text, block.line)
        for block in mdblocks.blocks(text)
        if block.kind == "heading"
    ]
''',
    ),
]
for old, new in edits:
    assert text.count(old) == 1, f"{path}: expected one {old!r}"
    text = text.replace(old, new)
path.write_text(text)
PY
# wrong: sed -i -e 's/^    headings = \[\]$/    headings, fenced = [], False/' -e 's/^        match = HEADING.match(line)$/        if line.lstrip().startswith("```"):\n            fenced = not fenced\n        match = None if fenced else HEADING.match(line)/' src/tocgen/headings.py
# step
python3 - <<'PY'
from pathlib import Path

path = Path("src/tocgen/anchors.py")
text = path.read_text()
old = '''    """The anchor of each heading, in order."""
    return [anchor(heading.text) for heading in headings]
'''
new = '''    """The anchor of each heading, in order; a repeated anchor gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    names = []
    for heading in headings:
        name = anchor(heading.text)
        earlier = seen.get(name, 0)
        seen[name] = earlier + 1
        names.append(f"{name}-{earlier}" if earlier else name)
    return names
'''
assert text.count(old) == 1, f"{path}: anchors() is not as expected"
path.write_text(text.replace(old, new))
PY
# wrong: sed -i 's/^    return \[anchor(heading.text) for heading in headings\]$/    names = [anchor(heading.text) for heading in headings]\n    return [n if n not in names[:i] else f"{n}-{names[:i].count(n) + 1}" for i, n in enumerate(names)]/' src/tocgen/anchors.py
# wrong: sed -i 's/^    return \[anchor(heading.text) for heading in headings\]$/    texts = [heading.text for heading in headings]\n    return [anchor(t) if t not in texts[:i] else f"{anchor(t)}-{texts[:i].count(t)}" for i, t in enumerate(texts)]/' src/tocgen/anchors.py
# step
python3 -m pytest -q
