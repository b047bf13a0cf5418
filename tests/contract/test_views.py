"""Each view of the gateway reads its request with exactly the models its route declares in the contract
(``services/contract/routes.py``), from which the served OpenAPI document is made: a view that parsed a body,
a query string or headers with another model (or one the document does not list) would answer differently from
what the document says. Checked here, on the views' source, rather than on every request (the move path is hot).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

import pytest

from services.contract import models as m
from services.contract.routes import ROUTES, Route
from services.core.config import Config
from services.gateway.app import create_app

APP = create_app(Config(redis_url="redis://127.0.0.1:1/0"))  # builds the URL map; connects to nothing
READERS = ("body", "query", "headers")


def models_read(view: Any) -> dict[str, set[str]]:
    """The models a view passes to ``body(m.X)``, ``query(m.X)``, ``headers(m.X)``, by reader."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(view)))
    found: dict[str, set[str]] = {reader: set() for reader in READERS}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in READERS
                and node.args and isinstance(node.args[0], ast.Attribute)):
            found[node.func.id].add(node.args[0].attr)
    return found


def answers(view: Any) -> bool:
    tree = ast.parse(textwrap.dedent(inspect.getsource(view)))
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "answer"
               for n in ast.walk(tree))


@pytest.mark.parametrize("route", [r for r in ROUTES if r.endpoint in APP.view_functions], ids=lambda r: r.endpoint)
def test_each_view_reads_exactly_the_models_its_route_declares(route: Route) -> None:
    read = models_read(APP.view_functions[route.endpoint])
    for reader, declared in (("body", route.body), ("query", route.query), ("headers", route.headers)):
        expected = set() if declared is None else {declared.__name__}
        assert read[reader] == expected, f"{route.endpoint}: {reader}"
        for name in read[reader]:
            assert getattr(m, name) is declared


@pytest.mark.parametrize("route", [r for r in ROUTES if r.response is not None and r.media == "application/json"],
                         ids=lambda r: r.endpoint)
def test_each_json_view_answers_through_its_routes_response_model(route: Route) -> None:
    assert answers(APP.view_functions[route.endpoint]), route.endpoint


def test_every_route_has_a_view_and_the_websocket_move_is_read_by_the_rest_moves_model() -> None:
    assert {r.endpoint for r in ROUTES} <= set(APP.view_functions)
    from services.gateway.api import ws

    source = inspect.getsource(ws.WsSession.move)
    assert "parse_value(m.SubmitMove," in source and "parse_value(m.MoveOptions," in source
    options = {f for f in m.MoveOptions.__struct_fields__}
    assert options == {"idempotency_key", "include"}
    assert m.MoveOptions.__annotations__["idempotency_key"] == m.IdempotencyHeaders.__annotations__["idempotency_key"]
