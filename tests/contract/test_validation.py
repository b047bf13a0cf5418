"""Request bodies through the contract's models: the API's error codes and messages (``DomainError`` of kind
MALFORMED, the core's own error, so every door answers alike); a WebSocket message checked exactly as the same
body sent over REST; responses serialised through their models with stored JSON passed through untouched."""

from __future__ import annotations

import orjson
import pytest

from services.contract import models as m
from services.contract import validation
from services.contract.limits import INT_MAX, INT_MIN, MAX_JSON_DEPTH
from services.contract.validation import answer, dump, parse, parse_params, parse_value
from services.core.errors import DomainError, Kind


def nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def code_of(model: type[m.Request], raw: bytes) -> str:
    with pytest.raises(DomainError) as err:
        parse(model, raw)
    assert err.value.kind is Kind.MALFORMED
    try:  # the same body as a decoded WebSocket message: the same code and message
        decoded = orjson.loads(raw or b"{}")
    except orjson.JSONDecodeError:
        return err.value.code
    with pytest.raises(DomainError) as again:
        parse_value(model, decoded)
    assert (again.value.code, again.value.message) == (err.value.code, err.value.message)
    return err.value.code


@pytest.mark.parametrize(("raw", "code"), [
    (b"{nope", "malformed_json"), (b"[1, 2]", "malformed_json"), (b'"text"', "malformed_json"),
    (b'{"move": {"type": "x"}, "version": 1, "zeta": 1, "alpha": 2}', "unknown_field"),
    (b'{"move": {"type": "x"}}', "missing_field"), (b"", "missing_field"),
    (b'{"move": {"type": "x"}, "version": "1"}', "wrong_type"),
    (b'{"move": {"type": "x"}, "version": true}', "wrong_type"),
    (b'{"move": {"type": "x"}, "version": 1.5}', "wrong_type"),
    (b'{"move": [], "version": 1}', "wrong_type"),
    (b'{"move": {"type": "x"}, "version": -1}', "wrong_type"),
])
def test_a_move_body_gets_the_apis_code_for_each_mistake(raw: bytes, code: str) -> None:
    assert code_of(m.SubmitMove, raw) == code


def test_the_first_unknown_field_in_sorted_order_is_named_with_the_allowed_ones() -> None:
    with pytest.raises(DomainError) as err:
        parse(m.SubmitMove, b'{"zeta": 1, "alpha": 2}')
    assert err.value.message == "unknown field 'alpha'; allowed: move, version"


def test_unknown_fields_come_before_missing_ones_and_missing_before_wrong_types() -> None:
    assert code_of(m.CreateMatch, b'{"players": "x", "bogus": 1}') == "unknown_field"
    assert code_of(m.CreateMatch, b'{"players": "x"}') == "missing_field"
    assert code_of(m.CreateMatch, b'{"game": 3, "players": 99}') == "wrong_type"  # types before ranges


def test_a_json_number_with_an_integral_value_is_an_integer_and_true_is_not_a_number() -> None:
    assert parse(m.SubmitMove, b'{"move": {"type": "x"}, "version": 2.0}').version == 2
    assert parse(m.CreateMatch, b'{"game": "clash", "players": 2.0}').players == 2
    assert code_of(m.CreateMatch, b'{"game": "clash", "players": true}') == "wrong_type"
    assert code_of(m.CreateMatch, b'{"game": "clash", "players": 2, "join": 1}') == "wrong_type"


def test_nesting_deeper_than_the_limit_is_too_deep_whatever_the_depth() -> None:
    within = orjson.dumps({"move": {"type": "x", "a": nested(MAX_JSON_DEPTH - 3)}, "version": 1})
    assert parse(m.SubmitMove, within).version == 1
    for depth in (MAX_JSON_DEPTH, 300, 5000):  # past the decoder's own recursion limit too
        raw = b'{"move": {"type": "x", "a": ' + b"[" * depth + b"]" * depth + b'}, "version": 1}'
        assert code_of(m.SubmitMove, raw) == "too_deep", depth
    with pytest.raises(DomainError) as err:
        parse(m.CreateMatch, orjson.dumps({"game": "g", "players": 2, "options": {"a": nested(40)}}))
    assert str(MAX_JSON_DEPTH) in err.value.message


@pytest.mark.parametrize(("body", "code"), [
    ({"game": "clash", "players": 17}, "invalid_options"),
    ({"game": "clash", "players": 0}, "invalid_options"),
    ({"game": "clash", "players": 2, "seats": [{"kind": "robot"}, {"kind": "human"}]}, "bad_seats"),
    ({"game": "clash", "players": 2, "seats": [{"kind": "bot", "level": "god"}, {"kind": "human"}]}, "bad_seats"),
    ({"game": "clash", "players": 2, "seats": [{"kind": "human", "x": 1}, {"kind": "human"}]}, "bad_seats"),
    ({"game": "clash", "players": 2, "seats": ["human", "bot"]}, "bad_seats"),
    ({"game": "clash", "players": 2, "seats": [{"kind": "human", "player": "-x"}, {"kind": "human"}]}, "bad_player"),
    ({"game": "clash", "players": 2, "takeover_level": "god"}, "bad_seats"),
    ({"game": "clash", "players": 2, "clock": {"mode": "sundial"}}, "bad_clock"),
    ({"game": "clash", "players": 2, "clock": {"mode": "per_move", "seconds": 0.1}}, "bad_clock"),
    ({"game": "clash", "players": 2, "clock": {"mode": "per_move", "seconds": "60"}}, "bad_clock"),
    ({"game": "clash", "players": 2, "seed": -1}, "wrong_type"),
    ({"game": "clash", "players": 2, "seed": 2**63}, "wrong_type"),
])
def test_a_create_body_gets_the_code_its_field_declares(body: dict[str, object], code: str) -> None:
    assert code_of(m.CreateMatch, orjson.dumps(body)) == code


def test_the_message_names_the_field_that_is_wrong() -> None:
    with pytest.raises(DomainError) as err:
        parse(m.CreateMatch, orjson.dumps({"game": "clash", "players": 2, "seats": [{"kind": "robot"}]}))
    assert err.value.message.startswith("seats[0].kind:")


def test_join_webhook_and_empty_bodies() -> None:
    assert parse(m.JoinMatch, b"") == m.JoinMatch()
    assert code_of(m.JoinMatch, b'{"seat": -1}') == "no_such_seat"
    assert code_of(m.JoinMatch, b'{"player": ""}') == "bad_player"
    assert code_of(m.AddWebhook, b'{"url": "https://x.example", "events": []}') == "bad_webhook"
    assert code_of(m.AddWebhook, b'{"url": "https://x.example", "events": ["match.lost"]}') == "bad_webhook"
    assert parse(m.Empty, b"{}") == m.Empty() and parse(m.Empty, b"") == m.Empty()
    assert code_of(m.Empty, b'{"reason": "bored"}') == "unknown_field"


def test_query_parameters_and_headers_are_read_from_text_with_bad_parameter_or_their_own_code() -> None:
    query = parse_params(m.EventsQuery, {"after": "4", "wait": "30", "until": "turn", "ignored": "x"})
    assert (query.after, query.wait, query.until) == (4, 30, "turn")
    assert parse_params(m.EventsQuery, {}).wait == 0
    assert parse_params(m.EventsQuery, {"wait": "31"}).wait == 31  # the operator's bound: the gateway checks it
    for bad in ({"wait": "-1"}, {"wait": "soon"}, {"until": "later"}, {"after": "-1"}, {"include": "views"}):
        with pytest.raises(DomainError) as err:
            parse_params(m.EventsQuery, bad)
        assert err.value.code == "bad_parameter", bad
    assert parse_params(m.IdempotencyHeaders, {"Idempotency-Key": "k1"}).idempotency_key == "k1"
    with pytest.raises(DomainError) as err:
        parse_params(m.IdempotencyHeaders, {"Idempotency-Key": "k" * 129})
    assert err.value.code == "bad_idempotency_key"


def test_a_response_carries_stored_json_as_it_is_and_leaves_unset_fields_out() -> None:
    view = b'{"board": [[1, 2]], "hand": ["W28"]}'
    doc = m.Events(version=3, status="active", to_act=[0], events=[m.Event(version=3, kind="joined", seat=1,
                                                                          to_act=[0])],
                   view=m.fragment(view), result=None)
    encoded = dump(doc)
    assert view in encoded
    assert orjson.loads(encoded) == {"version": 3, "status": "active", "to_act": [0], "result": None,
                                     "events": [{"version": 3, "kind": "joined", "seat": 1, "to_act": [0]}],
                                     "view": orjson.loads(view)}


def test_a_websocket_move_is_the_rest_body_plus_the_header_and_parameter_rest_sends_apart() -> None:
    body = parse_value(m.SubmitMove, {"move": {"type": "draw"}, "version": 2.0})
    assert (body.move, body.version) == ({"type": "draw"}, 2)
    options = parse_value(m.MoveOptions, {"idempotency_key": "k1", "include": "legal_moves"})
    assert (options.idempotency_key, options.include) == ("k1", "legal_moves")
    for bad, code in (({"idempotency_key": ""}, "bad_idempotency_key"), ({"idempotency_key": 7}, "wrong_type"),
                      ({"include": "views"}, "bad_parameter")):
        with pytest.raises(DomainError) as err:
            parse_value(m.MoveOptions, bad)
        assert err.value.code == code, bad
    with pytest.raises(DomainError) as err:
        parse_value(m.SubmitMove, {"move": {"type": "x", "deep": nested(40)}, "version": 1})
    assert err.value.code == "too_deep"


def test_integers_past_signed_64_bits_in_free_form_json_are_the_fields_code_on_both_paths() -> None:
    """msgspec decodes any size; orjson, which stores the move and sends it on, stops at 64 bits (a 500 before)."""
    edge = parse(m.SubmitMove, b'{"move": {"type": "x", "n": [%d, %d]}, "version": 1}' % (INT_MAX, INT_MIN))
    assert edge.move["n"] == [INT_MAX, INT_MIN]
    for n in (INT_MAX + 1, INT_MIN - 1, 10**30):
        for version in (b"1", b"1.0"):  # the fast typed decode, and the slow path (2.0 -> 2)
            raw = b'{"move": {"type": "x", "n": {"m": [%d]}}, "version": %s}' % (n, version)
            with pytest.raises(DomainError) as err:
                parse(m.SubmitMove, raw)
            assert (err.value.code, err.value.message) == ("malformed_move", "move: integers must be between -2**63 "
                                                                             "and 2**63-1"), raw
        with pytest.raises(DomainError) as err:
            parse_value(m.SubmitMove, {"move": {"type": "x", "n": n}, "version": 1})
        assert err.value.code == "malformed_move"
    with pytest.raises(DomainError) as err:
        parse(m.CreateMatch, b'{"game": "clash", "players": 2, "options": {"x": %d}}' % 2**64)
    assert err.value.code == "wrong_type"
    assert code_of(m.SubmitMove, b'{"move": {"type": "x"}, "version": %d}' % 2**64) == "wrong_type"


def test_an_answer_goes_out_through_its_model_with_the_cores_stored_json_as_it_is(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validation, "STRICT", False)  # (the suite's gateways run strictly: see the next test)
    view = b'{"hand": ["W28"]}'
    doc = {"version": 4, "seat": 1, "moves": orjson.Fragment(b'[{"type": "draw"}]'), "internal": "dropped"}
    assert orjson.loads(answer(m.LegalMoves, doc)) == {"version": 4, "seat": 1, "moves": [{"type": "draw"}]}
    events = {"version": 3, "status": "active", "to_act": [0], "events": [], "view": orjson.Fragment(view),
              "result": None}
    assert view in answer(m.Events, events)
    with pytest.raises(Exception, match="status"):  # a document without a field its model requires: a bug
        answer(m.Events, {k: v for k, v in events.items() if k != "status"})


def test_in_strict_mode_a_field_the_contract_does_not_declare_is_refused_not_dropped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The test suite's gateways run strictly: a field the core adds without the contract fails loudly."""
    monkeypatch.setattr(validation, "STRICT", True)
    doc = {"version": 3, "status": "active", "to_act": [0], "result": None, "view": None,
           "events": [{"version": 3, "kind": "move", "seat": 0, "to_act": [1], "hand": [3, 7]}]}
    with pytest.raises(validation.Undeclared, match=r"events\[0\]\.hand"):
        answer(m.Events, doc)
    del doc["events"][0]["hand"]  # type: ignore[attr-defined]
    assert orjson.loads(answer(m.Events, doc))["events"][0]["kind"] == "move"


def test_warm_up_builds_every_model_a_route_names_and_every_request_models_plan() -> None:
    """msgspec builds a struct type's information on first use, unsafely across threads (a gateway worker died
    of SIGSEGV when two request threads first answered with one model at once): the app builds them all first."""
    from services.contract.routes import ROUTES

    warmed = set(validation.warm_up())
    named = {t for route in ROUTES for t in (route.body, route.response, route.path_params, route.query,
                                             route.headers) if t is not None}
    assert named <= warmed
    planned = {model for model in warmed if issubclass(model, m.Request | m.Params)}
    assert planned and all(validation._plan(model) is validation._plan(model) for model in planned)
    assert validation._plan.cache_info().currsize >= len(planned)


def test_the_gateway_warms_the_contract_before_it_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    from services.core.config import Config
    from services.gateway import app as gateway_app

    calls: list[int] = []
    monkeypatch.setattr(gateway_app, "warm_up", lambda: calls.append(1) or ())
    gateway_app.create_app(Config(redis_url="redis://127.0.0.1:1/0"))  # connects to nothing
    assert calls == [1]
