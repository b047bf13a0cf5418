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
    """Compose's Prometheus (Debian's: no Kubernetes discovery) finds every process by DNS; Kubernetes' by pod
    annotations, which every workload carries."""
    yaml = pytest.importorskip("yaml")
    compose_config = yaml.safe_load((DEPLOY / "prometheus-compose.yml").read_text())
    jobs = {job["job_name"]: job for job in compose_config["scrape_configs"]}
    assert set(jobs) == {"rules", "gateway", "bots", "timekeeper", "webhooks"}
    assert all("dns_sd_configs" in job and "kubernetes_sd_configs" not in job for job in jobs.values())
    k8s_config = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    assert [job["job_name"] for job in k8s_config["scrape_configs"]] == ["kubernetes-pods"]
    datasource = yaml.safe_load((DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml").read_text())
    dashboard = orjson.loads((DEPLOY / "grafana" / "dashboards" / "meeple.json").read_bytes())
    uids = {t["datasource"]["uid"] for p in dashboard["panels"] for t in p.get("targets", [])}
    assert uids == {datasource["datasources"][0]["uid"]}
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    assert "python:services.gateway.gunicorn_conf" in compose["services"]["gateway"]["command"]
    assert any("prometheus-compose.yml" in volume for volume in compose["services"]["prometheus"]["volumes"])
    assert any("provisioning" in volume for volume in compose["services"]["grafana"]["volumes"])


def test_the_gateways_metrics_are_scraped_on_their_own_port_never_the_published_one() -> None:
    """Issue 49: the gateway's metrics (tenants' names among them) were on its API port, which the entrance
    publishes. Compose and Kubernetes set MEEPLE_METRICS_PORT, Prometheus scrapes that port, and neither the
    load balancer nor the Service exposes it."""
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    port = int(compose["services"]["gateway"]["environment"]["MEEPLE_METRICS_PORT"])
    assert port != 8000 and all(str(port) not in p for p in compose["services"]["lb"]["ports"])
    jobs = {j["job_name"]: j for j in yaml.safe_load((DEPLOY / "prometheus-compose.yml").read_text())["scrape_configs"]}
    assert [c["port"] for c in jobs["gateway"]["dns_sd_configs"]] == [port]
    gateway, service = list(yaml.safe_load_all((DEPLOY / "k8s" / "gateway.yaml").read_text()))[:2]
    pod = gateway["spec"]["template"]
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert int(env["MEEPLE_METRICS_PORT"]) == int(pod["metadata"]["annotations"]["prometheus.io/port"]) == port
    assert [p["targetPort"] for p in service["spec"]["ports"]] == [8000]
    assert f"{port}" not in (DEPLOY / "haproxy.cfg").read_text()


def test_no_compose_image_comes_from_docker_hub_but_grafanas_optional_profile() -> None:
    """Docker Hub is not reachable here: every image is built from Debian (deploy/images/base.Dockerfile)."""
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    for name, service in compose["services"].items():
        if name == "grafana":
            assert service["profiles"] == ["grafana"]
            continue
        assert service["image"].startswith("${MEEPLE_"), f"{name} uses {service['image']}"
    froms = re.findall(r"^FROM (\S+)", (DEPLOY / "Dockerfile").read_text(), re.M)
    assert froms and all(f == "${PYTHON_BASE}" for f in froms)
    base = (DEPLOY / "images" / "base.Dockerfile").read_text()
    assert re.findall(r"^FROM (\S+)", base, re.M)[0] == "${DEBIAN}"


def test_the_ca_bundle_secret_reaches_pip_only_in_the_build_stage() -> None:
    """A corporate proxy's CA goes in as a BuildKit secret (a tmpfs mount of one RUN), never into a layer; the
    final stage copies only the venv."""
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    build, final = dockerfile.split("\nFROM ${PYTHON_BASE}\n", 1)
    assert "--mount=type=secret,id=ca" in build and "pip install" in build
    assert "secret" not in final and "PIP_CERT" not in final
    assert "COPY --from=build /opt/meeple /opt/meeple" in final
    assert "--prefix" not in dockerfile  # a venv of Debian's Python, copied whole


def test_the_build_context_leaves_out_the_venv_git_and_caches() -> None:
    lines = [line.strip() for line in (DEPLOY.parent / ".dockerignore").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert lines[0] == "*"  # everything out, then what pip install needs back in
    allowed = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    assert allowed == {"pyproject.toml", "setup.py", "README.md", "proto", "services", "ai", "loadtests", "tooling",
                       "deploy/probe.py"}


def test_the_image_holds_every_package_the_project_installs() -> None:
    """``pip install .`` in the image installs the packages pyproject.toml lists; one left out of the build context
    or the Dockerfile's COPY lines is missing in the image. Without ``tooling`` the whole ``meeple`` command failed
    there: it loads its tools by name, and ``loadtests`` (``meeple loadtest``) imports ``tooling``."""
    import tomllib

    include = tomllib.loads((DEPLOY.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = {pattern.rstrip("*") for pattern in include["include"]}
    copied = set(re.findall(r"^COPY (\S+) \1$", (DEPLOY / "Dockerfile").read_text(), re.M))
    allowed = {line.strip()[1:].rstrip("/") for line in (DEPLOY.parent / ".dockerignore").read_text().splitlines()
               if line.strip().startswith("!")}
    assert packages == {"services", "ai", "proto", "loadtests", "tooling"}
    assert packages <= copied and packages <= allowed, (packages - copied, packages - allowed)


def test_cluster_workers_wait_for_the_formed_cluster_and_restart() -> None:
    """bots-1 and timekeeper-1 died with "All slots are not covered" when they started before the cluster-forming
    job finished: they wait for it (depends_on + the probe's wait for every slot) and restart if they die."""
    yaml = pytest.importorskip("yaml")
    services = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())["services"]
    for name in ("gateway", "bots", "timekeeper", "webhooks"):
        service = services[name]
        formed = service["depends_on"]["redis-cluster-create"]
        assert formed == {"condition": "service_completed_successfully", "required": False}, name
        assert service["command"][:3] == ["python3", "/opt/meeple/probe.py", "exec-when-ready"], name
        assert service["restart"] == "unless-stopped", name
    assert services["redis-cluster-create"]["restart"] == "on-failure"
    assert "cluster_state:ok" in str(services["redis-cluster-create"]["entrypoint"])
    for name, service in services.items():  # published on loopback only
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), f"{name} publishes {port}"


def test_compose_and_kubernetes_run_the_same_images_probes_and_settings() -> None:
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())["services"]
    docs = dict(_manifests())
    deployments = {doc["metadata"]["name"].removeprefix("meeple-"): doc for name, doc in docs.items()
                   if ":Deployment/" in name}
    assert set(deployments) == {"gateway", "bots", "timekeeper", "webhooks", "rules"}
    for name, doc in deployments.items():
        pod = doc["spec"]["template"]["spec"]  # type: ignore[index]
        container = pod["containers"][0]
        assert compose[name]["image"] == "${MEEPLE_IMAGE:-" + container["image"] + "}", name
        probe = container["readinessProbe"]
        check = compose[name]["healthcheck"]["test"]
        if "httpGet" in probe:
            assert check[-1] == f"http://127.0.0.1:{probe['httpGet']['port']}{probe['httpGet']['path']}", name
        else:
            assert check[-2:] == ["grpc", f"127.0.0.1:{probe['grpc']['port']}"], name
        k8s_env = {e["name"] for e in container.get("env", [])}
        assert set(compose[name].get("environment", {})) - {"PROMETHEUS_MULTIPROC_DIR"} <= k8s_env | {
            "PROMETHEUS_MULTIPROC_DIR"}, name
        args = container["args"]
        command = compose[name]["command"]
        assert command[command.index(args[0]) + 1:][:2] == args[1:3], name  # the same program and role
        if name != "rules":
            waits = pod["initContainers"][0]["command"]
            assert waits[:3] == ["python3", "/opt/meeple/probe.py", "redis"], name
    redis_images = {doc["spec"]["template"]["spec"]["containers"][0]["image"]  # type: ignore[index]
                    for name, doc in docs.items() if ":StatefulSet/" in name or ":Job/" in name}
    assert redis_images == {"meeple-redis:bookworm"}
    assert compose["redis"]["image"] == "${MEEPLE_REDIS_IMAGE:-meeple-redis:bookworm}"


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
