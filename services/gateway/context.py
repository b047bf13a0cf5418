"""The gateway's dependencies, hung on ``app.extensions["meeple"]`` by the app factory, and the caller of the
request being served (resolved once by the core's access policy, whichever door asks)."""

from __future__ import annotations

from dataclasses import dataclass, field

from flask import current_app, g, request

from services.core import access, limits
from services.core.access import Caller
from services.core.config import Config
from services.core.service import Core

from .hub import Hub
from .metrics import GatewayMetrics


@dataclass
class Gateway:
    core: Core
    metrics: GatewayMetrics
    hub: Hub
    #: ``GET /v1/games/{game}``: each game's encoded document and its ETag (they change only with the code)
    components: dict[str, tuple[bytes, str]] = field(default_factory=dict)

    @property
    def config(self) -> Config:
        return self.core.config


def gateway() -> Gateway:
    gw: Gateway = current_app.extensions["meeple"]
    return gw


def core() -> Core:
    return gateway().core


def client_ip() -> str:
    """The connecting address: what per-address limits and quotas count (run proxies that set it right)."""
    return request.remote_addr or "unknown"


def caller() -> Caller:
    """Who is asking (see :mod:`services.core.access`): once per request, from its headers."""
    if "caller" in g:
        found: Caller = g.caller
        return found
    the_core, address = core(), client_ip()
    g.caller = access.authenticate(
        the_core.redis, authorization=access.parse_authorization(request.headers.get("Authorization")),
        api_key=request.headers.get("X-API-Key"), address=address, anonymous=the_core.config.anonymous,
        on_bad_key=lambda: limits.count_address(the_core, address), keys=the_core.keys)
    return g.caller
