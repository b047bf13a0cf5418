"""Tooling: the local stack (``meeple run``), a local Redis Cluster, the benchmarks (``meeple bench``) and the
metrics scraper they and the load tests share.

The product (``services``) never imports this package (an import-linter contract in pyproject.toml): the
``meeple`` command names these modules and loads them when they are installed.
"""
