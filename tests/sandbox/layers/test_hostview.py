"""What the `host` image's mask shows of a host: planned on a folder laid out like a host's
root, so every rule is checked without depending on what this machine holds."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from sprout.sandbox.errors import BadArgument
from sprout.sandbox.jail.idmap import IdRange, check_unclaimed, configured_range
from sprout.sandbox.layers.hostview import plan_mask


def make_host(root: Path) -> Path:
    for folder in (
        "usr/bin",
        "etc/ssh",
        "etc/ssl/private",
        "var/lib/dpkg",
        "var/lib/postgresql",
        "var/log",
        "var/tmp",
        "tmp",
        "root",
        "home/alice",
        "work/run",
        "opt/tools",
    ):
        (root / folder).mkdir(parents=True)
    (root / "etc/passwd").write_text("root:x:0:0::/root:/bin/bash\n")
    (root / "etc/shadow").write_text("root:$6$salt$hash:20000:0:99999:7:::\nbin:*:20000::::::\n")
    (root / "etc/shadow").chmod(0o640)
    (root / "etc/ssh/ssh_host_ed25519_key").write_text("PRIVATE")
    (root / "etc/ssh/ssh_host_ed25519_key").chmod(0o600)
    (root / "etc/ssh/ssh_host_ed25519_key.pub").write_text("public")
    (root / "etc/ssl/private").chmod(0o700)
    (root / "opt/tools/task").mkdir()
    (root / ".dockerenv").write_text("")
    return root


def test_the_mask_shows_system_folders_and_nothing_else(tmp_path):
    host = make_host(tmp_path / "host")
    mask = {e.rel: e for e in plan_mask((str(host / "opt/tools/task"),), host_root=str(host))}
    assert mask["work"].kind == "gone" and mask[".dockerenv"].kind == "gone"
    for emptied in ("tmp", "root", "home", "proc", "dev", "sys"):
        assert mask[emptied].kind == "empty", emptied
    assert mask["tmp"].mode == 0o1777 and mask["var/tmp"].mode == 0o1777
    assert "usr" not in mask and "usr/bin" not in mask, "system folders pass through"
    assert mask["var/log"].kind == "empty"
    assert mask["var/lib/postgresql"].kind == "empty" and "var/lib/dpkg" not in mask
    assert mask["etc/ssh/ssh_host_ed25519_key"].kind == "gone"
    assert "etc/ssh/ssh_host_ed25519_key.pub" not in mask
    assert mask["etc/ssl/private"].kind == "empty" and mask["etc/ssl/private"].mode == 0o700
    assert mask["opt/tools/task"].kind == "gone", "a named task folder is hidden"
    assert mask["opt/tools"].kind == "dir" and mask["opt"].kind == "dir"


def test_passwords_are_locked_and_the_rest_of_the_line_kept(tmp_path):
    host = make_host(tmp_path / "host")
    [shadow] = [e for e in plan_mask((), host_root=str(host)) if e.rel == "etc/shadow"]
    assert shadow.kind == "file" and stat.S_IMODE(shadow.mode) == 0o640
    assert shadow.content == b"root:*:20000:0:99999:7:::\nbin:*:20000::::::\n"


def test_a_path_already_hidden_needs_no_entry_of_its_own(tmp_path):
    host = make_host(tmp_path / "host")
    plain = plan_mask((), host_root=str(host))
    named = plan_mask((str(host / "work/run"), str(host / "home/alice")), host_root=str(host))
    assert named == plain


def test_an_id_range_that_a_user_owns_is_refused(tmp_path, monkeypatch):
    subuid = tmp_path / "subuid"
    subuid.write_text("alice:100000:65536\n")
    monkeypatch.setattr("sprout.sandbox.jail.idmap.SUBORDINATE_FILES", (str(subuid),))
    check_unclaimed(IdRange(1 << 30, 65536))
    with pytest.raises(BadArgument, match=f"{subuid} line 1 \\(alice's ids\\)"):
        check_unclaimed(IdRange(131072, 65536))


@pytest.mark.parametrize("text", ["", "1000", "a:b", "0:65536", "4294967290:65536"])
def test_a_bad_id_range_is_named(text, monkeypatch):
    monkeypatch.setenv("SPROUT_ID_RANGE", text)
    if not text:
        assert configured_range() == IdRange(1 << 30, 65536)
        return
    with pytest.raises(BadArgument, match=f"^SPROUT_ID_RANGE: expected BASE:COUNT.*got {text!r}$"):
        configured_range()
