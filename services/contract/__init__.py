"""The HTTP contract, written once: typed request/response models, their validation and serialisation, the error
codes and limits, and the OpenAPI 3.1 document generated from them. Imports neither Flask nor the gateway.

* ``models.py``: every body (``Request``/``Response`` structs) and parameter set (``Params``);
* ``validation.py``: ``parse(Model, raw) -> Model`` (or ``ContractError(code, message)``, kind ``invalid``),
  ``parse_params(Model, mapping)`` for query strings and headers, ``dump(model) -> bytes``;
* ``errors.py``: each error code's kind, each kind's status (``KIND_STATUS``: the gateway's one table);
* ``limits.py``: limits, enums, documented defaults;
* ``routes.py``: every operation (path, auth, models, errors); ``openapi.py``: ``document()``/``document_bytes()``.

A new route: its models in ``models.py``, one ``Route`` in ``routes.py``, then ``make contract`` (the SDKs' types
and the docs' tables follow). Its thin view: ``body = parse(route.body, request.get_data())``,
``query = parse_params(route.query, request.args)``, ``return Response(dump(Answer(...)), mimetype=JSON)``.
"""
