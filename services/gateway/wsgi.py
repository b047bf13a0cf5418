"""gunicorn entry point: ``gunicorn -c python:services.gateway.gunicorn_conf services.gateway.wsgi:app``.

Under the gevent worker (the default of ``gunicorn_conf``) gRPC must cooperate with gevent's loop
before any channel exists, or a call would block every request of the worker while it waits.
"""

from gevent import monkey

if monkey.is_module_patched("socket"):
    from grpc.experimental import gevent as grpc_gevent  # type: ignore[attr-defined]

    grpc_gevent.init_gevent()

from services.gateway.app import create_app

app = create_app()
