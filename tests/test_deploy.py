"""The checked-in observability config refers to metrics the processes really export."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from prometheus_client import CollectorRegistry

from services.bots.worker import BotMetrics
from services.gateway.metrics import GatewayMetrics
from services.rules.server import RulesMetrics

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
#: Read from Redis at scrape time (MatchStatsCollector), so not in any registry here.
STORE_METRICS = {"meeple_matches_active", "meeple_matches_created", "meeple_matches_finished"}


def exported() -> set[str]:
    names = set(STORE_METRICS)
    for metrics in (GatewayMetrics(CollectorRegistry()), RulesMetrics(CollectorRegistry()),
                    BotMetrics(CollectorRegistry())):
        names |= {family.name for family in metrics.registry.collect()}
    return names


def test_every_dashboard_query_uses_exported_metrics() -> None:
    dashboard = orjson.loads((DEPLOY / "grafana" / "dashboards" / "meeple.json").read_bytes())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    assert len(exprs) >= 20
    known = exported()
    for expr in exprs:
        for name in re.findall(r"\bmeeple_[a-z_]+", expr):
            base = re.sub(r"_(bucket|sum|count|total)$", "", name)
            assert base in known, f"{name} in {expr!r} is not exported by any process"
    titles = " ".join(panel["title"] for panel in dashboard["panels"]).lower()
    for topic in ("latency", "per second", "error", "bot"):
        assert topic in titles


def test_prometheus_scrapes_every_process_and_grafana_is_provisioned() -> None:
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    assert {job["job_name"] for job in config["scrape_configs"]} >= {"rules", "gateway", "bots"}
    datasource = yaml.safe_load((DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml").read_text())
    dashboard = orjson.loads((DEPLOY / "grafana" / "dashboards" / "meeple.json").read_bytes())
    uids = {t["datasource"]["uid"] for p in dashboard["panels"] for t in p.get("targets", [])}
    assert uids == {datasource["datasources"][0]["uid"]}
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    assert "python:services.gateway.gunicorn_conf" in compose["services"]["gateway"]["command"]
    assert any("provisioning" in volume for volume in compose["services"]["grafana"]["volumes"])
