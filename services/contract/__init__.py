"""The HTTP contract, written once: typed request/response models, their validation and serialisation, the error
codes and limits, and the OpenAPI 3.1 document generated from them. Imports no Flask.

* ``models.py``: every body (``Request``/``Response`` structs) and parameter set (``Params``);
* ``validation.py``: ``parse(Model, raw) -> Model`` and ``parse_value`` (a decoded WebSocket message) raise the
  core's ``DomainError(MALFORMED, code, message)``; ``parse_params(Model, mapping)`` for query strings and
  headers; ``answer(Model, doc) -> bytes`` serialises a core document through its model;
* ``errors.py``: every code of every status, derived from the core's catalogue and ``statuses.py`` (a kind's
  status, the transport's own codes: the tables the gateway answers with);
* ``limits.py``: limits, enums, documented defaults;
* ``routes.py``: every operation (path, endpoint, models, errors; who may call it is ``access.py``'s ``ACCESS``);
  ``openapi.py``: ``document()``/``document_bytes()``, what ``GET /v1/openapi.json`` serves.

A new route: its models in ``models.py``, one ``Route`` in ``routes.py``, its action in ``access.py``'s ``ACCESS``,
then ``make contract`` (the SDKs' types and the docs' tables follow). Its thin view (``services/gateway/api``):
``b = body(m.X)``, ``q = query(m.Y)``, ``return answer(core_function(core(), caller(), ...))``.
"""
