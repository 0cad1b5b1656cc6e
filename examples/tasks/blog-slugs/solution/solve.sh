#!/bin/bash
set -e
cd /app
# step
cat README.md requirements.txt && ls wheels && cat src/quillsite/slugs.py && grep -n "def plan_pages" -A8 src/quillsite/site.py
# step
python3 -m pip install -r requirements.txt
# wrong: python3 -m pip install asciifold-lite
# trap: python3 -m pip install asciifold-lite
# trap names: test_slugs_spell_letters_in_ascii
# step
python3 - <<'PY'
from pathlib import Path

path = Path("src/quillsite/slugs.py")
text = path.read_text()
edits = [
    ("import re\n", "import re\n\nimport asciifold\n"),
    ("    text = title.lower()\n", "    text = asciifold.fold(title).lower()\n"),
]
for old, new in edits:
    assert text.count(old) == 1, f"{path}: expected one {old!r}"
    text = text.replace(old, new)
path.write_text(text)
PY
# wrong: sed -i -e 's/^import re$/import re\n\nimport asciifold/' -e 's/    return text.strip("-")/    return asciifold.fold(text).strip("-")/' src/quillsite/slugs.py
# wrong: sed -i -e 's/^import re$/import re\nimport unicodedata/' -e 's/    text = title.lower()/    text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode().lower()/' src/quillsite/slugs.py
# step
python3 - <<'PY'
from pathlib import Path

path = Path("src/quillsite/site.py")
text = path.read_text()
old = """    pages = []
    for post in sorted(posts, key=lambda post: (post.date, post.title)):
        path = f"{post.date.year}/{slugify(post.title)}.html"
        pages.append((path, post))
"""
new = """    pages = []
    count: dict[str, int] = {}  # posts so far per YEAR/SLUG
    for post in sorted(posts, key=lambda post: (post.date, post.title)):
        stem = f"{post.date.year}/{slugify(post.title)}"
        count[stem] = count.get(stem, 0) + 1
        suffix = f"-{count[stem]}" if count[stem] > 1 else ""
        pages.append((f"{stem}{suffix}.html", post))
"""
assert text.count(old) == 1, f"{path}: plan_pages is not as expected"
path.write_text(text.replace(old, new))
PY
# wrong: sed -i 's|^        pages.append((path, post))|        clashes = sum(seen.startswith(path[:-5]) for seen, _ in pages)\n        if clashes:\n            path = f"{path[:-5]}-{clashes}.html"\n        pages.append((path, post))|' src/quillsite/site.py
# wrong: sed -i 's|^        pages.append((path, post))|        if any(seen == path for seen, _ in pages):\n            path = path.replace(".html", f"-{len(pages) + 1}.html")\n        pages.append((path, post))|' src/quillsite/site.py
# step
python3 -m pytest -q
