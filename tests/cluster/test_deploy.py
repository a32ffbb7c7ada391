"""The cluster's deploy files: the template unit verifies, and the unit, compose.cluster.yaml
and nginx-cluster.conf name the same nodes with real settings."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from server.config import ENV_PREFIX, Settings, SettingsError, from_env
from tests.cluster.clusterutil import CONF_NODES

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
SCRIPT = Path(sys.executable).parent / "tripeaks-server"
UNIT = DEPLOY / "tripeaks@.service"


def _instance(tmp_path: Path, text: str | None = None) -> Path:
    """The template with ExecStart pointed at the installed script, as instance 8765."""
    text = text if text is not None else UNIT.read_text()
    assert "ExecStart=/opt/tripeaks/venv/bin/tripeaks-server" in text
    (tmp_path / "tripeaks@.service").write_text(
        text.replace("/opt/tripeaks/venv/bin/tripeaks-server", str(SCRIPT))
    )
    return tmp_path / "tripeaks@8765.service"


def _verify(unit: Path) -> subprocess.CompletedProcess[str]:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed here (Debian package systemd)")
    return subprocess.run(
        [tool, "verify", unit.name], cwd=unit.parent, capture_output=True, text=True,
        check=False,
    )


def test_an_instance_of_the_template_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    result = _verify(_instance(tmp_path))
    assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), result.stderr


def test_verify_does_catch_a_broken_template_instance(tmp_path: Path) -> None:
    broken = UNIT.read_text().replace("ProtectSystem=strict", "ProtectSystem=bogus")
    result = _verify(_instance(tmp_path, broken))
    assert "ProtectSystem" in result.stderr or "protect system" in result.stderr


def _unit_env(port: str) -> dict[str, str]:
    env = {}
    for line in UNIT.read_text().splitlines():
        if line.startswith("Environment="):
            key, _, value = line.removeprefix("Environment=").partition("=")
            env[key] = value.replace("%i", port).replace("%S", "/var/lib")
    return env


def test_each_unit_instance_is_a_node_named_as_nginx_names_it() -> None:
    conf = (DEPLOY / "nginx-cluster.conf").read_text()
    for node_id, port in CONF_NODES.items():
        env = _unit_env(str(port))
        env |= {"TRIPEAKS_DB": "postgresql://u@db/x", "TRIPEAKS_REDIS_URL": "redis://r:6379/0"}
        settings = from_env(env)
        assert (settings.port, settings.node_id) == (port, node_id)
        assert settings.node_url == f"/n/{node_id}/ws"
        assert f"upstream tripeaks_node_{node_id} {{" in conf
        assert re.search(rf"server 127\.0\.0\.1:{port} max_fails=1", conf)
    # Without a PostgreSQL database a node refuses to start.
    with pytest.raises(SettingsError, match="PostgreSQL"):
        from_env(_unit_env("8765") | {"TRIPEAKS_REDIS_URL": "redis://r:6379/0"})


def _compose() -> dict[str, Any]:
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed")
    doc = yaml.safe_load((DEPLOY / "compose.cluster.yaml").read_text())
    assert isinstance(doc, dict)
    return doc


def test_compose_cluster_runs_three_nodes_redis_postgres_and_nginx() -> None:
    services = _compose()["services"]
    nodes = {name: s for name, s in services.items() if name.startswith("node-")}
    assert len(nodes) == 3 and {"redis", "postgres", "nginx"} <= set(services)
    assert "./nginx-cluster.conf:/etc/nginx/nginx.conf:ro" in services["nginx"]["volumes"]
    ids = set()
    for node in nodes.values():
        raw = node["environment"]
        assert set(raw) <= {ENV_PREFIX + f.name.upper() for f in dataclasses.fields(Settings)}
        env = {k: re.sub(r"\$\{(\w+):([?-])([^}]*)\}", lambda m: "pw" if m[2] == "?" else m[3], v)
               for k, v in raw.items()}
        settings = from_env(env)
        assert settings.cluster and settings.db.startswith("postgresql://")
        assert CONF_NODES[settings.node_id] == settings.port
        assert node["network_mode"] == services["nginx"]["network_mode"]
        ids.add(settings.node_id)
    assert ids == set(CONF_NODES)

