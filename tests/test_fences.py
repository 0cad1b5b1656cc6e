"""Fenced blocks in a model's reply: which are commands, and the prose around them."""

from __future__ import annotations

from sprout.fences import fenced_blocks, shell_blocks, without_shell_blocks

REPLY = """Let me look.

```bash
ls src
```

Then this snippet, which is not a command:

```python
print("```bash")
```

```sh
cat README.md
```
and an unclosed one
```bash
rm -rf /"""


def test_commands_are_the_closed_shell_blocks() -> None:
    assert shell_blocks(REPLY) == ["ls src", "cat README.md"]
    assert [tag for tag, _ in fenced_blocks(REPLY)] == ["bash", "python", "sh"]


def test_the_prose_keeps_everything_but_the_commands() -> None:
    prose = without_shell_blocks(REPLY)
    assert "ls src" not in prose and "cat README.md" not in prose
    assert 'print("```bash")' in prose and "Then this snippet" in prose
    assert prose.endswith("```bash\nrm -rf /"), "an unclosed fence is prose"
    assert without_shell_blocks("no fences at all") == "no fences at all"
