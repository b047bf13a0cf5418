"""The clients people use in a browser: the play page (``/play``, static ES modules, no build step) and the
API docs (``/docs``, Swagger UI from the flask-swagger-ui package, so it works offline)."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, Flask, Response, redirect, send_from_directory
from flask_swagger_ui import get_swaggerui_blueprint

PLAY_DIR = Path(__file__).resolve().parent.parent / "static" / "play"

bp = Blueprint("play", __name__)


@bp.get("/play")
def play() -> Response:
    return send_from_directory(PLAY_DIR, "index.html", max_age=0)


@bp.get("/play/<path:name>")
def play_file(name: str) -> Response:
    return send_from_directory(PLAY_DIR, name, max_age=0)


@bp.get("/docs")
def docs() -> Response:
    return redirect("/docs/", code=308)  # type: ignore[return-value]


def register(app: Flask) -> None:
    """Both blueprints; Swagger UI reads /v1/openapi.json and keeps the bearer token across reloads."""
    app.register_blueprint(bp)
    app.register_blueprint(get_swaggerui_blueprint(
        "/docs", "/v1/openapi.json",
        config=SWAGGER_UI))


#: Swagger UI: operations listed by area (the document's tags, in its order) with their schemas folded, a filter
#: box, and the bearer token kept across reloads. The intro is the document's own short description.
SWAGGER_UI = {"app_name": "Meeple REST API", "layout": "BaseLayout", "persistAuthorization": True,
              "tryItOutEnabled": True, "deepLinking": True, "docExpansion": "list", "defaultModelsExpandDepth": 0,
              "filter": True, "displayRequestDuration": True}
