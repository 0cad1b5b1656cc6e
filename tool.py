\t# wrong: not a marker inside a heredoc
\tprint(1)
\tPY
# wrong: touch main.c
# step
echo done
"""


def test_markers_count_only_outside_heredocs_and_every_other_line_is_kept():
    first, second = split_solution(HEREDOC_SOLUTION)
    head = "set -e\n# the preamble's comments stay\n\ncd /app"
    assert first.command == (
        f"{head}\ncat > main.c <<'EOF'\n#include <stdio.h>\n# step\n"
        "int main(void) { return 0; }\nEOF\ncat <<-PY > tool.py\n"
        "\t# wrong: not a marker inside a heredoc\n\tprint(1)\n\tPY"
    )
    assert first.wrong == (f"{head}\ntouch main.c",)
    assert second.command == f"{head}\necho done"


'''
s = s.replace(old, new)
p.write_text(s)
EOF
.venv/bin/ruff format -q tests; timeout 900 .venv/bin/pytest -q -x tests/tasks 2>&1 | grep -E "^E  |passed|failed|FAILED" | head -20
