#!/bin/bash
set -e
cd /app
# step
cat README.md requirements.txt && ls wheels && cat src/pipewright/graph.py src/pipewright/cli.py
# step
python3 -m pip install -r requirements.txt
# wrong: python3 -m pip install --no-deps -r requirements.txt
# trap: python3 -m pip install --no-deps -r requirements.txt
# trap names: test_caret_and_tilde_constraints
# step
cat > src/pipewright/graph.py <<'PY'
"""The build order: every package after the packages it depends on."""

from __future__ import annotations

import heapq

from pipewright.workspace import Package


class CycleError(ValueError):
    """Dependencies that go round in a circle: no order can build them."""


def build_order(packages: dict[str, Package]) -> list[str]:
    """Package names, each after all of its dependencies.

    Of the packages ready to build, the alphabetically first goes next, so the
    order depends on the dependencies alone, never on the order of the file.
    """
    waiting = {name: set(package.depends) for name, package in packages.items()}
    ready = [name for name, dependencies in waiting.items() if not dependencies]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        name = heapq.heappop(ready)
        order.append(name)
        for other, dependencies in waiting.items():
            if name in dependencies:
                dependencies.discard(name)
                if not dependencies:
                    heapq.heappush(ready, other)
    if len(order) < len(packages):
        raise CycleError(f"dependency cycle: {' -> '.join(find_cycle(waiting))}")
    return order


def find_cycle(waiting: dict[str, set[str]]) -> list[str]:
    """One cycle among the packages that could not be built, closed: ["a", "b", "a"].

    Every such package still waits for another of them, so following the
    alphabetically first dependency from the alphabetically first package
    must come back to a package already on the path.
    """
    stuck = {name for name, dependencies in waiting.items() if dependencies}
    path = [min(stuck)]
    while True:
        following = min(waiting[path[-1]] & stuck)
        if following in path:
            return [*path[path.index(following) :], following]
        path.append(following)
PY
# wrong: sed -i -e 's/^    for name in packages:$/    for name in sorted(packages):/' -e 's/^        for dependency in packages\[name\].depends:$/        for dependency in sorted(packages[name].depends):/' -e 's/^from pipewright.workspace import Package$/&\n\n\nclass CycleError(ValueError):\n    """Dependencies that go round in a circle."""/' src/pipewright/graph.py
# step
python3 - <<'PY'
from pathlib import Path

path = Path("src/pipewright/cli.py")
text = path.read_text()
edits = [
    (
        "from pipewright.graph import build_order\n",
        "from pipewright.graph import CycleError, build_order\n",
    ),
    (
        "    for name in build_order(packages):\n",
        "    try:\n"
        "        order = build_order(packages)\n"
        "    except CycleError as error:\n"
        '        print(f"pipewright: {error}", file=sys.stderr)\n'
        "        return 3\n"
        "    for name in order:\n",
    ),
]
for old, new in edits:
    assert text.count(old) == 1, f"{path}: expected one {old!r}"
    text = text.replace(old, new)
path.write_text(text)
PY
# wrong: sed -i -e 's/^from pipewright.graph import build_order$/from pipewright.graph import CycleError, build_order/' -e 's/^    for name in build_order(packages):$/    try:\n        order = build_order(packages)\n    except CycleError as error:\n        print(f"pipewright: {error}", file=sys.stderr)\n        return 1\n    for name in order:/' src/pipewright/cli.py
# wrong: sed -i 's/^    for name in build_order(packages):$/    try:\n        order = build_order(packages)\n    except RecursionError:\n        print("pipewright: dependency cycle", file=sys.stderr)\n        return 3\n    for name in order:/' src/pipewright/cli.py
# step
python3 -m pytest -q
