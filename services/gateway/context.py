"""The gateway's dependencies, hung on ``app.extensions["meeple"]`` by the app factory."""

from __future__ import annotations

from dataclasses import dataclass

from flask import current_app

from .config import GatewayConfig
from .hub import Hub
from .metrics import GatewayMetrics
from .rules_client import RulesClient
from .store import MatchStore


@dataclass
class Gateway:
    config: GatewayConfig
    store: MatchStore
    rules: RulesClient
    metrics: GatewayMetrics
    hub: Hub


def gateway() -> Gateway:
    gw: Gateway = current_app.extensions["meeple"]
    return gw
