"""The gateway's dependencies, hung on ``app.extensions["meeple"]`` by the app factory."""

from __future__ import annotations

from dataclasses import dataclass

from flask import current_app

from services.core.config import Config
from services.core.rules_client import RulesClient
from services.core.store import MatchStore

from .hub import Hub
from .metrics import GatewayMetrics


@dataclass
class Gateway:
    config: Config
    store: MatchStore
    rules: RulesClient
    metrics: GatewayMetrics
    hub: Hub


def gateway() -> Gateway:
    gw: Gateway = current_app.extensions["meeple"]
    return gw
