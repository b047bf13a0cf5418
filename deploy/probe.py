"""Health probes and the start-up wait of the Meeple containers (copied into the image as /opt/meeple/probe.py).

    python3 /opt/meeple/probe.py http http://127.0.0.1:8000/readyz    exit 0 if it answers 200
    python3 /opt/meeple/probe.py grpc 127.0.0.1:50051                  exit 0 if the gRPC health check says SERVING
    python3 /opt/meeple/probe.py redis [--wait 120]                    exit 0 once $REDIS_URL answers and, for a
                                                                      cluster, its state is ok with every slot covered
    python3 /opt/meeple/probe.py exec-when-ready CMD ARG...            wait as ``redis`` does, then exec CMD

Compose's healthchecks and Kubernetes' exec probes / init containers run the same code, so both deployments
wait for the same thing. A worker that starts before the cluster is formed would die with "All slots are not
covered"; under ``exec-when-ready`` it waits (logging why) and then starts.
"""

from __future__ import annotations

import os
import sys
import time
import urllib.request


def http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=3) as response:
        return bool(response.status == 200)


def grpc_serving(address: str) -> bool:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=3)
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def redis_ready(url: str) -> str | None:
    """None when ``url``'s Redis serves every key; else why not."""
    import redis

    from services import redisconn

    target = redisconn.cluster_url(url)
    try:
        if target is None:
            client = redis.Redis.from_url(url, socket_timeout=3, socket_connect_timeout=3)
            client.ping()
            return None
        client = redis.Redis.from_url(target, socket_timeout=3, socket_connect_timeout=3)
        info = client.execute_command("CLUSTER INFO")  # redis-py parses it into a dict (raw text if not)
        if isinstance(info, dict):
            fields = {str(k): str(v) for k, v in info.items()}
        else:
            text = info.decode() if isinstance(info, bytes) else str(info)
            fields = dict(line.split(":", 1) for line in text.split() if ":" in line)
        if fields.get("cluster_state") != "ok" or fields.get("cluster_slots_ok") != "16384":
            return f"cluster_state {fields.get('cluster_state')}, slots ok {fields.get('cluster_slots_ok')}"
        return None
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def wait_for_redis(seconds: float) -> bool:
    url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    deadline = time.monotonic() + seconds
    said = ""
    while True:
        why = redis_ready(url)
        if why is None:
            return True
        if time.monotonic() >= deadline:
            print(f"probe: Redis not ready after {seconds:.0f} s: {why}", file=sys.stderr, flush=True)
            return False
        if why != said:
            print(f"probe: waiting for Redis ({why})", file=sys.stderr, flush=True)
            said = why
        time.sleep(1)


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "http":
        return 0 if _safe(http_ok, argv[1]) else 1
    if len(argv) >= 2 and argv[0] == "grpc":
        return 0 if _safe(grpc_serving, argv[1]) else 1
    if argv and argv[0] == "redis":
        wait = float(argv[2]) if len(argv) >= 3 and argv[1] == "--wait" else 0.0
        return 0 if wait_for_redis(wait) else 1
    if len(argv) >= 2 and argv[0] == "exec-when-ready":
        if not wait_for_redis(float(os.environ.get("MEEPLE_READY_WAIT_S", "300"))):
            return 1
        os.execvp(argv[1], argv[1:])
    print(__doc__, file=sys.stderr)
    return 2


def _safe(check: object, arg: str) -> bool:
    try:
        return bool(check(arg))  # type: ignore[operator]
    except Exception as exc:
        print(f"probe: {exc}", file=sys.stderr)
        return False


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
