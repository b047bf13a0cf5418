"""The gateway's dependencies, hung on ``app.extensions["meeple"]`` by the app factory."""

from __future__ import annotations

from dataclasses import dataclass

from flask import current_app
from prometheus_client import CollectorRegistry, Histogram

from .config import GatewayConfig
from .rules_client import RulesClient
from .store import MatchStore


@dataclass
class Gateway:
    config: GatewayConfig
    store: MatchStore
    rules: RulesClient
    registry: CollectorRegistry
    latency: Histogram


def gateway() -> Gateway:
    gw: Gateway = current_app.extensions["meeple"]
    return gw
