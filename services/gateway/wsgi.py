"""gunicorn entry point: ``gunicorn services.gateway.wsgi:app`` (config from the environment)."""

from services.gateway.app import create_app

app = create_app()
