"""The machine's package-index settings, as set-up steps, the agent and the verifier get
them (no network)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sprout.images import machine_network
from sprout.images.machine_network import (
    CA_BUNDLE,
    IndexSettings,
    index_settings,
    machine_inputs,
    merged_pem,
    pip_config_files,
    read_pip_config,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_pip_config_install_section_and_later_files_win(tmp_path: Path) -> None:
    first = write(
        tmp_path / "etc.conf",
        "[global]\nindex-url = https://one.example/simple\ntimeout = 5\n"
        "[install]\nindex_url = https://two.example/simple\n[list]\nformat = json\n",
    )
    second = write(tmp_path / "user.conf", "[global]\ntimeout = 9\n")
    broken = write(tmp_path / "broken.conf", "no section header\n")
    found = read_pip_config([first, tmp_path / "missing.conf", broken, second])
    assert found == {"index-url": "https://two.example/simple", "timeout": "9"}


def test_files_come_in_pips_order_and_devnull_means_none(tmp_path: Path) -> None:
    environ = {"HOME": "/h", "XDG_CONFIG_DIRS": "/a:/b", "PIP_CONFIG_FILE": "/x/pip.ini"}
    files = [str(path) for path in pip_config_files(environ)]
    assert files[:5] == [
        "/b/pip/pip.conf",
        "/a/pip/pip.conf",
        "/etc/pip.conf",
        "/h/.pip/pip.conf",
        "/h/.config/pip/pip.conf",
    ]
    assert files[-1] == "/x/pip.ini"
    assert pip_config_files({"PIP_CONFIG_FILE": os.devnull}) == []


def test_only_http_indexes_travel_and_uv_names_win(tmp_path: Path) -> None:
    config = write(
        tmp_path / "pip.conf",
        "[global]\nindex-url = https://mirror.example/simple\n"
        "extra-index-url = file:///opt/pypi/simple\n  https://extra.example/simple\n",
    )
    settings = index_settings({}, [config], None)
    assert settings == IndexSettings(
        "https://mirror.example/simple", ("https://extra.example/simple",)
    )

    environ = {
        "UV_DEFAULT_INDEX": "https://uv.example/simple",
        "PIP_INDEX_URL": "https://pip.example/simple",
        "UV_INDEX": "internal=https://internal.example/simple file:///local",
        "PIP_EXTRA_INDEX_URL": "https://extra.example/simple",
    }
    settings = index_settings(environ, [config], None)
    assert settings.index_url == "https://uv.example/simple"
    assert settings.extra_index_urls == (
        "https://internal.example/simple",
        "https://extra.example/simple",
    )

    local_only = write(tmp_path / "local.conf", "[global]\nindex-url = file:///opt/pypi/simple\n")
    assert index_settings({}, [local_only], None) == IndexSettings()


def test_a_cert_travels_only_when_it_is_a_file(tmp_path: Path) -> None:
    bundle = write(tmp_path / "ca.pem", "")
    config = write(tmp_path / "pip.conf", f"[global]\ncert = {tmp_path / 'nowhere.pem'}\n")
    assert index_settings({}, [config], None).cert is None
    assert index_settings({"PIP_CERT": str(bundle)}, [config]).cert == str(bundle)
    assert index_settings({}, [], str(bundle)).cert == str(bundle), "the machine's own"


def test_the_verifier_environment_names_both_clients_settings() -> None:
    settings = IndexSettings(
        "https://mirror.example/simple",
        ("https://a.example/simple", "https://b.example/simple"),
        cert="/etc/ssl/certs/ca-certificates.crt",
        proxies=(("HTTPS_PROXY", "http://proxy:3128"),),
    )
    assert settings.env() == {
        "UV_PYTHON_PREFERENCE": "system",
        "PIP_INDEX_URL": "https://mirror.example/simple",
        "UV_DEFAULT_INDEX": "https://mirror.example/simple",
        "PIP_EXTRA_INDEX_URL": "https://a.example/simple https://b.example/simple",
        "UV_INDEX": "https://a.example/simple https://b.example/simple",
        "PIP_CERT": CA_BUNDLE,
        "SSL_CERT_FILE": CA_BUNDLE,
        "HTTPS_PROXY": "http://proxy:3128",
    }
    assert IndexSettings().env() == {"UV_PYTHON_PREFERENCE": "system"}


def test_trusted_hosts_reach_both_clients(tmp_path: Path) -> None:
    config = write(tmp_path / "pip.conf", "[global]\ntrusted-host = a.example\n  b.example\n")
    settings = index_settings({}, [config], None)
    assert settings.trusted_hosts == ("a.example", "b.example")
    assert (
        settings.env()["PIP_TRUSTED_HOST"]
        == settings.env()["UV_INSECURE_HOST"]
        == ("a.example b.example")
    )
    assert index_settings({"PIP_TRUSTED_HOST": "c.example"}, [config], None).trusted_hosts == (
        "c.example",
    )


def test_the_agent_gets_no_credentials_that_pips_config_does_not_hold(tmp_path: Path) -> None:
    """A token in a variable of sprout's process is the user's secret: the agent's sandbox
    gets no setting that carries one. One in pip's config files every process reads already."""
    config = write(
        tmp_path / "pip.conf",
        "[global]\nextra-index-url = https://u:config-token@extra.example/simple\n"
        "trusted-host = extra.example\n",
    )
    environ = {
        "PIP_INDEX_URL": "https://bot:env-token@mirror.example/simple",
        "HTTPS_PROXY": "http://user:proxy-password@proxy.example:3128",
        "HTTP_PROXY": "http://proxy.example:3128",
        "NO_PROXY": "localhost,.internal",
    }
    settings = index_settings(environ, [config], None)
    assert settings.env()["PIP_INDEX_URL"] == environ["PIP_INDEX_URL"], "set-up gets it all"
    agent = settings.agent_env()
    assert "env-token" not in str(agent) and "proxy-password" not in str(agent)
    assert "PIP_INDEX_URL" not in agent and "UV_DEFAULT_INDEX" not in agent
    assert agent["PIP_EXTRA_INDEX_URL"] == "https://u:config-token@extra.example/simple"
    assert agent["UV_INSECURE_HOST"] == "extra.example"
    assert agent["HTTP_PROXY"] == "http://proxy.example:3128" and "HTTPS_PROXY" not in agent
    assert agent["NO_PROXY"] == "localhost,.internal"

    # an extra list with one secret of its own is left out whole: the verifier, whose fork
    # carries the agent's variables over its own, then still gets the full list
    mixed = index_settings(
        {"PIP_EXTRA_INDEX_URL": "https://open.example/simple https://t:k@closed.example/simple"},
        [],
        None,
    )
    assert "PIP_EXTRA_INDEX_URL" not in mixed.agent_env()
    assert (
        IndexSettings("https://mirror.example/simple").agent_env()
        == IndexSettings("https://mirror.example/simple").env()
    ), "no credentials: the agent gets what set-up steps get"


def test_what_set_up_saw_of_the_machine_changes_only_with_the_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolv = write(tmp_path / "resolv.conf", "nameserver 10.0.0.1\n")
    bundle = write(tmp_path / "ca.pem", "one authority\n")
    monkeypatch.setattr(machine_network, "RESOLV_CONF", resolv)
    settings = IndexSettings("https://mirror.example/simple", cert=str(bundle))
    seen = machine_inputs(settings)
    assert machine_inputs(IndexSettings("https://mirror.example/simple", cert=str(bundle))) == seen
    bundle.write_text("another authority\n")
    assert machine_inputs(settings) != seen
    bundle.write_text("one authority\n")
    resolv.write_text("nameserver 10.0.0.2\n")
    assert machine_inputs(settings) != seen
    resolv.write_text("nameserver 10.0.0.1\n")
    assert machine_inputs(settings) == seen
    assert machine_inputs(IndexSettings("https://other.example/simple", cert=str(bundle))) != seen


def pem(body: str) -> bytes:
    return f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----".encode()


def test_bundles_merge_each_certificate_once() -> None:
    image = pem("AAAA\nBBBB") + b"\n" + pem("CCCC") + b"\n"
    machine = b"# a comment\n" + pem("AAAABBBB") + b"\n" + pem("DDDD")
    merged = merged_pem(image, machine)
    assert merged == b"\n".join([pem("AAAA\nBBBB"), pem("CCCC"), pem("DDDD")]) + b"\n"
