"""The machine's package-index settings, as the verifier's sandbox gets them (no network)."""

from __future__ import annotations

import os
from pathlib import Path

from sprout.images.network import (
    CA_BUNDLE,
    IndexSettings,
    index_settings,
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


def pem(body: str) -> bytes:
    return f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----".encode()


def test_bundles_merge_each_certificate_once() -> None:
    image = pem("AAAA\nBBBB") + b"\n" + pem("CCCC") + b"\n"
    machine = b"# a comment\n" + pem("AAAABBBB") + b"\n" + pem("DDDD")
    merged = merged_pem(image, machine)
    assert merged == b"\n".join([pem("AAAA\nBBBB"), pem("CCCC"), pem("DDDD")]) + b"\n"
