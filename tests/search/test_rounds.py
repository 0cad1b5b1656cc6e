"""Creating a round's missing branches, which every branching schedule and the training
schedule share: what was recorded is kept, and only what is missing is planned."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from sprout.roles import BranchPlan
from sprout.search.rounds import complete_round
from sprout.tree import RolloutTree, Turn


def test_only_the_missing_branches_are_created_and_plans_are_asked_only_then(
    tmp_path: Path,
) -> None:
    tree = RolloutTree(tmp_path / "sprout.db")
    tree.add_task("t1", {})
    root = tree.root("t1", [{"role": "system", "content": "s"}], "base0", method="m")
    for index in (1, 2):
        tree.commit_turn(Turn(root.id, index, "actor", "t", (), (), f"layer{index}"))
    search: Any = SimpleNamespace(tree=tree, method=SimpleNamespace(name="m"))
    asked: list[int] = []

    def plans() -> list[BranchPlan]:
        asked.append(1)
        return [BranchPlan(root.id, b, "```bash\nls\n```" if b else None, "") for b in (2, 1, 0)]

    first = complete_round(search, 3, [], 2, plans)
    assert [(a.boundary, a.round, a.method, a.guided) for a in first] == [
        (2, 3, "m", True),
        (1, 3, "m", True),
    ]
    # a resumed round keeps what it made and creates the rest from the same plans
    resumed = complete_round(search, 3, first[:1], 3, plans)
    assert resumed[0] == first[0]
    assert [a.boundary for a in resumed[1:]] == [1, 0]
    assert complete_round(search, 3, resumed, 3, plans) == resumed
    assert len(asked) == 2, "a full round asks for no plans"
    assert len(tree.attempts("t1")) == 1 + 2 + 2
