# The base images, built on a Debian rootfs that debootstrap made and `docker import` loaded (no registry
# but Debian's): `python scripts/deploy_test.py images` builds every stage and tags it. Each stage adds one
# program from Debian's packages; build one with `docker build --target redis --build-arg DEBIAN=... .`.
ARG DEBIAN=meeple-debian:bookworm

FROM ${DEBIAN} AS apt
# No recommends, no docs, no apt lists left in the layer: the images stay small.
RUN printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' > /etc/apt/apt.conf.d/90meeple \
 && printf 'path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/locale/*\n' \
      > /etc/dpkg/dpkg.cfg.d/90meeple

# The project's runtime: Debian's Python 3.11 (the venv in deploy/Dockerfile is made from it).
FROM apt AS python
RUN apt-get update && apt-get install -y python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 meeple

# Redis 7 (one server, or a cluster node) and redis-cli (the cluster-forming job, health checks).
FROM apt AS redis
RUN apt-get update && apt-get install -y redis-server redis-tools \
 && rm -rf /var/lib/apt/lists/* && mkdir -p /data && chown redis:redis /data
WORKDIR /data
EXPOSE 6379 16379
CMD ["redis-server", "--protected-mode", "no", "--appendonly", "yes"]

# Prometheus 2.42 (Debian's build: no Kubernetes discovery, hence deploy/prometheus-compose.yml).
FROM apt AS prometheus
RUN apt-get update && apt-get install -y prometheus \
 && rm -rf /var/lib/apt/lists/* && mkdir -p /prometheus && chown prometheus:prometheus /prometheus
USER prometheus
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]

# HAProxy 2.6: the compose stack's one HTTP entrance in front of the gateway replicas (deploy/haproxy.cfg).
FROM apt AS haproxy
RUN apt-get update && apt-get install -y haproxy \
 && rm -rf /var/lib/apt/lists/*
EXPOSE 8000
CMD ["haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]
