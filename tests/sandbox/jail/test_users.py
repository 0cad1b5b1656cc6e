"""A sandbox's commands as a user other than its root (`SandboxConfig.user`), as `docker exec`
runs a container's commands as its image's USER: the ids, groups and HOME it names, no
capabilities, and the setting kept on checkpoints for every fork of them."""

from __future__ import annotations

import pytest

from sprout.sandbox import BadArgument, LayerStore, Sandbox
from sprout.sandbox.types import RunAs, SandboxConfig

pytestmark = pytest.mark.sandbox

APP = RunAs(uid=4242, gid=4243, groups=(4243, 27), name="app", home="/home/app")


def _prepared(layers: LayerStore) -> str:
    """A checkpoint with a root-owned 0755 directory, and a home and workdir of APP's."""
    with Sandbox.create(layers) as sandbox:
        setup = sandbox.run(
            "mkdir -m 0755 /srv/owned-by-root && mkdir -p /home/app /srv/work && "
            "chown 4242:4243 /home/app /srv/work"
        )
        assert setup.exit_code == 0, setup.output
        return sandbox.checkpoint()


def test_commands_run_with_the_users_ids_groups_and_home(overlay_store: LayerStore):
    base = _prepared(overlay_store)
    with Sandbox.fork(overlay_store, base, user=APP) as sandbox:
        seen = sandbox.run('id -u; id -g; id -G; echo "$HOME $USER $LOGNAME"')
    assert seen.exit_code == 0, seen.output
    assert seen.output.split("\n")[:4] == ["4242", "4243", "4243 27", "/home/app app app"]


def test_a_user_writes_its_home_but_not_a_root_owned_directory(overlay_store: LayerStore):
    base = _prepared(overlay_store)
    with Sandbox.fork(overlay_store, base, user=APP) as sandbox:
        denied = sandbox.run("touch /srv/owned-by-root/x")
        allowed = sandbox.run("touch ~/notes /srv/work/out && echo written")
        chown = sandbox.run("chown 0 ~/notes")
    assert denied.exit_code != 0 and "Permission denied" in denied.output
    assert allowed.exit_code == 0 and allowed.output == "written\n"
    assert chown.exit_code != 0  # no CAP_CHOWN: a user cannot give files away


def test_a_user_has_no_capabilities_and_root_keeps_the_default_set(overlay_store: LayerStore):
    base = _prepared(overlay_store)
    read = "grep -E '^Cap(Inh|Prm|Eff)' /proc/self/status | awk '{print $2}' | sort -u"
    with Sandbox.fork(overlay_store, base, user=APP) as sandbox:
        assert sandbox.run(read).output == "0000000000000000\n"
    with Sandbox.fork(overlay_store, base) as sandbox:
        assert (
            sandbox.run("grep '^CapEff' /proc/self/status").output != "CapEff:\t0000000000000000\n"
        )


def test_the_image_env_wins_over_the_passwd_home(overlay_store: LayerStore):
    base = _prepared(overlay_store)
    with Sandbox.fork(overlay_store, base, user=APP, env={"HOME": "/srv/work"}) as sandbox:
        assert sandbox.run("echo $HOME").output == "/srv/work\n"


def test_forks_of_a_users_checkpoint_run_as_that_user(overlay_store: LayerStore):
    base = _prepared(overlay_store)
    with Sandbox.fork(overlay_store, base, user=APP) as sandbox:
        sandbox.run("echo made > ~/by-app")
        checkpoint = sandbox.checkpoint()
    assert overlay_store.layer(checkpoint).config.user == APP
    with Sandbox.fork(overlay_store, checkpoint) as later:
        assert later.run("id -u; stat -c %u ~/by-app").output == "4242\n4242\n"


def test_a_user_survives_the_configs_json():
    config = SandboxConfig(image="host", workdir="/", user=APP)
    assert SandboxConfig.from_json(config.to_json()) == config
    assert SandboxConfig.from_json(SandboxConfig("host", "/").to_json()).user is None


def test_bad_users_are_refused(overlay_store: LayerStore):
    with pytest.raises(ValueError, match="user: expected ids"):
        RunAs(uid=-1, gid=0)
    with pytest.raises(ValueError, match=r"user\.home: expected an absolute path"):
        RunAs(uid=1, gid=1, home="home")
    base = _prepared(overlay_store)
    with pytest.raises(BadArgument, match="user"):
        Sandbox.fork(overlay_store, base, user="app")  # type: ignore[arg-type]
