"""The fixture every test that runs mini-swe-agent's own code needs."""

from __future__ import annotations

import pytest


@pytest.fixture
def mini_swe_agent(monkeypatch, tmp_path):
    """mini-swe-agent importable without its banner, its home config or a network fetch."""
    monkeypatch.setenv("MSWEA_SILENT_STARTUP", "1")
    monkeypatch.setenv("MSWEA_GLOBAL_CONFIG_DIR", str(tmp_path / "mini-config"))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return pytest.importorskip("minisweagent", reason="mini-swe-agent is not installed")
