"""R2E-Gym rows with exactly the fields the published datasets have, for the tests: the fix
as `parsed_commit_content` (a `git diff` read into R2E-Gym's structure, as a JSON string),
the expected statuses as `expected_output_json`, and the fields sprout does not read."""

from __future__ import annotations

import json
import re
from typing import Any

PUBLISHED_FIELDS = (
    "repo_name",
    "docker_image",
    "commit_hash",
    "parsed_commit_content",
    "execution_result_content",
    "modified_files",
    "modified_entity_summaries",
    "relevant_files",
    "num_non_test_files",
    "num_non_test_func_methods",
    "num_non_test_lines",
    "prompt",
    "problem_statement",
    "expected_output_json",
)
"""A published row's fields, in the datasets' order."""

_KINDS = {" ": "context", "+": "added", "-": "deleted"}
_MODES = ("old mode", "new mode", "deleted file mode", "new file mode")


def _file_diff(path: str) -> dict[str, Any]:
    return {
        "old_file_content": "",
        "new_file_content": "",
        "header": {"file": {"path": path}, "misc_line": None},
        "index_line": None,
        "is_binary_file": False,
        "binary_line": None,
        "minus_file": None,
        "plus_file": None,
        "hunks": [],
    }


def _hunk(line: str) -> dict[str, Any]:
    found = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)", line)
    assert found, line
    old, old_length, new, new_length, section = found.groups()
    return {
        "descriptor": {
            "old_range": {"start": int(old), "length": int(old_length) if old_length else None},
            "new_range": {"start": int(new), "length": int(new_length) if new_length else None},
            "section": section,
        },
        "line_group": {"all_lines": []},
        "modified_entities": [],
        "added_entities": [],
        "deleted_entities": [],
    }


def parsed_commit(diff: str, old_commit: str, new_commit: str) -> dict[str, Any]:
    """`diff` (git's output) in the structure R2E-Gym publishes a commit in."""
    files: list[dict[str, Any]] = []
    for line in diff.split("\n"):
        if line.startswith("diff --git a/"):
            files.append(_file_diff(line[len("diff --git a/") :].split(" b/")[0]))
        elif files and not files[-1]["hunks"]:
            current = files[-1]
            if line.startswith("index "):
                hashes, _, mode = line[len("index ") :].partition(" ")
                old, new = hashes.split("..")
                current["index_line"] = {
                    "old_commit_hash": old,
                    "new_commit_hash": new,
                    "mode": mode,
                }
            elif line.startswith(_MODES):
                misc = current["header"]["misc_line"]
                current["header"]["misc_line"] = f"{misc}\n{line}" if misc else line
            elif line.startswith("--- "):
                current["minus_file"] = {"path": line[4:]}
            elif line.startswith("+++ "):
                current["plus_file"] = {"path": line[4:]}
            elif line.startswith("@@ "):
                current["hunks"].append(_hunk(line))
        elif files and line.startswith("@@ "):
            files[-1]["hunks"].append(_hunk(line))
        elif files and line[:1] in ("", " ", "+", "-", "\\"):
            kind = "note" if line.startswith("\\") else _KINDS.get(line[:1], "context")
            content = line[2:] if kind == "note" else line[1:]
            files[-1]["hunks"][-1]["line_group"]["all_lines"].append(
                {"content": content, "type": kind}
            )
    return {
        "file_diffs": files,
        "old_commit_hash": old_commit,
        "new_commit_hash": new_commit,
        "commit_message": "Fix it",
        "commit_date": "2024-01-02T03:04:05",
        "metadata": {},
    }


def published_row(
    *,
    repo_name: str,
    image: str,
    commit_hash: str,
    parent: str,
    diff: str,
    expected: dict[str, str],
    issue: str = "add() subtracts. Make it add.",
) -> dict[str, Any]:
    """A row as R2E-Gym's datasets publish it (every field, JSON strings where they have
    them)."""
    commit = parsed_commit(diff, parent, commit_hash)
    paths = [each["header"]["file"]["path"] for each in commit["file_diffs"]]
    row = {
        "repo_name": repo_name,
        "docker_image": image,
        "commit_hash": commit_hash,
        "parsed_commit_content": json.dumps(commit),
        "execution_result_content": json.dumps({"repo_name": repo_name}),
        "modified_files": paths,
        "modified_entity_summaries": [],
        "relevant_files": paths,
        "num_non_test_files": len(paths),
        "num_non_test_func_methods": 1,
        "num_non_test_lines": 2,
        "prompt": "Write an issue for this commit.",
        "problem_statement": f"[ISSUE]\n{issue}\n[/ISSUE]",
        "expected_output_json": json.dumps(expected, indent=4),
    }
    assert tuple(row) == PUBLISHED_FIELDS
    return row
