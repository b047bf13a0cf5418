"""The checked-in observability config refers to metrics the processes really export."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from prometheus_client import CollectorRegistry

from services.bots.worker import BotMetrics
from services.core.metrics import CoreMetrics
from services.gateway.metrics import GatewayMetrics
from services.rules.server import RulesMetrics

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
#: Read from Redis at scrape time (MatchStatsCollector), so not in any registry here.
STORE_METRICS = {"meeple_matches_active", "meeple_matches_created", "meeple_matches_finished"}


def exported() -> set[str]:
    names = set(STORE_METRICS)
    for metrics in (GatewayMetrics(CollectorRegistry()), RulesMetrics(CollectorRegistry()),
                    BotMetrics(CollectorRegistry()), CoreMetrics(CollectorRegistry())):
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


def _manifests() -> list[tuple[str, dict[str, object]]]:
    yaml = pytest.importorskip("yaml")
    docs = []
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        docs += [(f"{path.name}:{doc['kind']}/{doc['metadata']['name']}", doc)
                 for doc in yaml.safe_load_all(path.read_text()) if doc]
    return docs


def test_every_kubernetes_manifest_is_valid_against_the_api_schemas() -> None:
    """Offline, strict (unknown fields are errors) against the schemas of a current Kubernetes release."""
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    docs = _manifests()
    assert len(docs) >= 12
    for name, doc in docs:
        try:
            kubernetes_validate.validate(doc, "1.30.0", strict=True)
        except kubernetes_validate.ValidationError as err:
            raise AssertionError(f"{name}: {err.message} at {list(err.path)}") from None


def test_the_kubernetes_deployment_runs_on_the_cluster_as_written() -> None:
    """The Redis URL selects the cluster client, a Job forms the cluster, every workload has resource
    requests, a readiness probe and a PodDisruptionBudget."""
    from services import redisconn

    docs = dict(_manifests())
    secret = next(doc for name, doc in docs.items() if name.endswith("Secret/meeple-redis"))
    url = secret["stringData"]["url"]  # type: ignore[index]
    assert redisconn.cluster_url(url) == "redis://meeple-redis:6379"  # RedisCluster's URL (database 0)
    job = next(doc for name, doc in docs.items() if ":Job/" in name)
    assert "--cluster create" in str(job)
    workloads = [doc for name, doc in docs.items() if ":Deployment/" in name or ":StatefulSet/" in name]
    budgets = {doc["spec"]["selector"]["matchLabels"]["app"]  # type: ignore[index]
               for name, doc in docs.items() if ":PodDisruptionBudget/" in name}
    for doc in workloads:
        app = doc["spec"]["selector"]["matchLabels"]["app"]  # type: ignore[index]
        assert app in budgets, f"{app} has no PodDisruptionBudget"
        for container in doc["spec"]["template"]["spec"]["containers"]:  # type: ignore[index]
            assert container["resources"]["requests"], app
            assert "readinessProbe" in container, app
    probes = {doc["metadata"]["name"]: doc["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]  # type: ignore[index]
              for doc in workloads}
    assert probes["meeple-gateway"]["httpGet"]["path"] == "/readyz"
    assert "grpc" in probes["meeple-rules"]


def test_compose_has_a_redis_cluster_profile() -> None:
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    nodes = [name for name, svc in compose["services"].items() if "cluster" in svc.get("profiles", [])]
    assert len([n for n in nodes if n.startswith("redis-node-")]) == 6
    assert "--cluster create" in str(compose["services"]["redis-cluster-create"])
    assert all("${REDIS_URL" in compose["services"][s]["environment"]["REDIS_URL"]
               for s in ("gateway", "bots", "timekeeper"))
