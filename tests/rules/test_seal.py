"""Sealed state bytes: replicas sharing a key trust each other's states; altered or foreign seals are refused.

Real servers on free loopback ports, real channels.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import grpc
import orjson
import pytest

from services.pb import rules_pb2, rules_pb2_grpc
from services.rules import seal
from services.rules.games import GAMES
from services.rules.games.base import InvalidState
from services.rules.seal import Sealer, new_key_spec
from services.rules.server import ERROR_CODE_KEY, RulesMetrics, serve, shutdown

KEY_A = new_key_spec("a")
KEY_B = new_key_spec("b")


class Replica:
    def __init__(self, sealer: Sealer) -> None:
        self.metrics = RulesMetrics()
        self.server, port = serve("127.0.0.1:0", metrics=self.metrics, sealer=sealer)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = rules_pb2_grpc.RulesStub(self.channel)

    def close(self) -> None:
        self.channel.close()
        shutdown(self.server, grace=0.5)

    def decodes(self, gid: str, source: str) -> float:
        return float(self.metrics.decodes.labels(gid, source)._value.get())


@pytest.fixture(scope="module")
def replicas() -> Iterator[dict[str, Replica]]:
    """Two replicas with key a (one also verifying old key b), one after rotation to b, one without keys."""
    out = {"a1": Replica(Sealer.from_spec(KEY_A)), "a2": Replica(Sealer.from_spec(f"{KEY_A},{KEY_B}")),
           "b": Replica(Sealer.from_spec(f"{KEY_B},{KEY_A}")), "none": Replica(Sealer())}
    yield out
    for replica in out.values():
        replica.close()


def play(stub: Any, gid: str, moves: int, other: Any = None) -> bytes:
    """A game's state after ``moves`` random moves, alternating replicas when ``other`` is given."""
    game = GAMES[gid]
    rng = random.Random(5)
    reply = stub.NewGame(rules_pb2.NewGameRequest(game=gid, players=max(game.min_players, 2), seed=11, derive=True))
    for i in range(moves):
        if reply.finished:
            break
        seat = rng.choice(list(reply.to_act))
        move = rng.choice(orjson.loads(next(m.moves_json for m in reply.legal if m.seat == seat)))
        target = other if other is not None and i % 2 else stub
        reply = target.ApplyMove(rules_pb2.ApplyMoveRequest(game=gid, state=reply.state, seat=seat,
                                                            move_json=orjson.dumps(move).decode(), derive=True))
    return bytes(reply.state)


def refusal(stub: Any, gid: str, state: bytes) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as err:
        stub.GetView(rules_pb2.GetViewRequest(game=gid, state=state, seat=0))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    return err.value


@pytest.mark.parametrize("gid", list(GAMES))
def test_replicas_sharing_a_key_trust_each_others_sealed_states(replicas: dict[str, Replica], gid: str) -> None:
    a1, a2 = replicas["a1"], replicas["a2"]
    before = a1.decodes(gid, "sealed") + a2.decodes(gid, "sealed")
    state = play(a1.stub, gid, 12, other=a2.stub)
    assert seal.is_sealed(state)
    assert a1.decodes(gid, "sealed") + a2.decodes(gid, "sealed") - before >= 6
    assert a1.decodes(gid, "validated") == a2.decodes(gid, "validated") == 0
    # readers holding no key (bots, audits) take the state out of its seal and validate it in full; the seal is the
    # rules service's envelope, which an engine does not know
    GAMES[gid].decode(seal.strip(state))
    with pytest.raises(InvalidState):
        GAMES[gid].decode(state)


@pytest.mark.parametrize("gid", list(GAMES))
def test_a_sealed_state_with_one_flipped_bit_is_invalid_argument(replicas: dict[str, Replica], gid: str) -> None:
    state = bytearray(play(replicas["a1"].stub, gid, 6))
    for where in (len(seal.MAGIC) + 3, len(state) - 40, len(state) // 2):  # MAC, payload end, payload middle
        tampered = bytearray(state)
        tampered[where] ^= 0x04
        err = refusal(replicas["a1"].stub, gid, bytes(tampered))
        assert "seal" in (err.details() or "") or "key id" in (err.details() or "")
        assert dict(err.trailing_metadata() or ()).get(ERROR_CODE_KEY) == "bad_seal"  # type: ignore[attr-defined]


def test_a_truncated_or_foreign_seal_is_invalid_argument(replicas: dict[str, Replica]) -> None:
    gid = "clash"
    state = play(replicas["a1"].stub, gid, 3)
    assert "truncated" in (refusal(replicas["a1"].stub, gid, state[:len(seal.MAGIC) + 4]).details() or "")
    # sealed with key b only: a replica holding only key a does not know the key id
    only_b = play(replicas["b"].stub, gid, 3)
    assert "key id 'b'" in (refusal(replicas["a1"].stub, gid, only_b).details() or "")
    # the same bytes sealed for another game do not verify there
    other = play(replicas["a1"].stub, "sideboards", 2)
    assert "seal does not verify" in (refusal(replicas["a1"].stub, gid, other).details() or "")


def test_rotation_old_key_still_verifies_new_key_signs(replicas: dict[str, Replica]) -> None:
    gid = "fierce-women"
    old = play(replicas["a1"].stub, gid, 4)
    reply = replicas["b"].stub.GetView(rules_pb2.GetViewRequest(game=gid, state=old, seat=0))
    assert orjson.loads(reply.view_json)
    moved = play(replicas["b"].stub, gid, 2)
    assert moved[len(seal.MAGIC) + 1:len(seal.MAGIC) + 2] == b"b"


def test_an_edited_log_with_a_recomputed_digest_fails_the_seal(replicas: dict[str, Replica]) -> None:
    """history_digest is an unkeyed checksum anyone can recompute; the keyed seal is what catches the edit."""
    from services.rules.games.they_who_were_8 import _digest

    gid = "they-who-were-8"
    stub = replicas["a1"].stub
    sealed = play(stub, gid, 10)
    kid_len = sealed[len(seal.MAGIC)]
    head = sealed[:len(seal.MAGIC) + 1 + kid_len + seal.MAC_BYTES]
    doc = orjson.loads(seal.strip(sealed))
    doc["log"] = doc["log"][:-1]
    doc["history_digest"] = _digest(doc["log"])
    err = refusal(stub, gid, head + orjson.dumps(doc))
    assert "seal does not verify" in (err.details() or "")


def test_unsealed_states_are_validated_in_full(replicas: dict[str, Replica]) -> None:
    """A third party's own (unsealed) state is accepted when valid and refused with the rule when not."""
    gid = "clash"
    replica = replicas["a1"]
    game = GAMES[gid]
    own = game.encode(game.new_game(2, 4, {}))
    before = replica.decodes(gid, "validated")
    replica.stub.GetView(rules_pb2.GetViewRequest(game=gid, state=own, seat=0))
    assert replica.decodes(gid, "validated") == before + 1
    doc = orjson.loads(own)
    doc["options"]["hidden_support"] = True
    assert "hidden_support requires random_support" in (refusal(replica.stub, gid, orjson.dumps(doc)).details() or "")


def test_without_keys_nothing_is_sealed_and_sealed_bytes_are_validated(replicas: dict[str, Replica]) -> None:
    """Turning sealing off never strands a stored match: its sealed bytes are unwrapped and validated."""
    gid = "sideboards"
    plain = play(replicas["none"].stub, gid, 4)
    assert not seal.is_sealed(plain)
    sealed = play(replicas["a1"].stub, gid, 4)
    before = replicas["none"].decodes(gid, "validated")
    replicas["none"].stub.GetView(rules_pb2.GetViewRequest(game=gid, state=sealed, seat=0))
    assert replicas["none"].decodes(gid, "validated") == before + 1


@pytest.mark.parametrize("spec", ["a:short", "no-colon", "a:" + "00" * 32 + ",a:" + "11" * 32, "bad id!:" + "00" * 32])
def test_bad_key_specs_are_refused_at_start(spec: str) -> None:
    with pytest.raises(ValueError, match=r"MEEPLE_SEAL_KEYS|seal key"):
        Sealer.from_spec(spec)


def test_key_spec_accepts_hex_and_base64() -> None:
    import base64
    import os

    raw = os.urandom(32)
    for text in (raw.hex(), base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode().rstrip("=")):
        assert Sealer.from_spec(f"k:{text}").keys["k"] == raw


def test_make_run_generates_one_key_under_var_and_reuses_it(tmp_path: Any) -> None:
    """``meeple run`` makes the key once (owner-only file) and every later start reuses it."""
    import stat

    from tooling.stack import seal_keys

    first = seal_keys(tmp_path)
    assert Sealer.from_spec(first).enabled
    assert stat.S_IMODE((tmp_path / "seal.keys").stat().st_mode) == 0o600
    assert seal_keys(tmp_path) == first


def test_the_service_refuses_to_start_with_a_malformed_key(monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    from services.rules.server import main

    monkeypatch.setenv(seal.ENV_VAR, "k1:too-short")
    assert main(["--port", "0", "--metrics-port", "0"]) == 2
    assert "at least 32 bytes" in caplog.text


def test_the_mac_covers_domain_game_key_id_and_state_in_this_layout() -> None:
    """The seal's MAC is HMAC-SHA256 over domain tag, game id, key id and state bytes, as replicas of every
    version compute it (the one-shot ``hmac.digest`` must give what the incremental HMAC gave)."""
    import hashlib
    import hmac

    from services.rules.seal import _DOMAIN

    key, payload = bytes(range(32)), b'{"game":"clash","v":1}' * 50
    sealed = seal.Sealer({"k1": key}, "k1").seal("clash", payload)
    mac = hmac.new(key, _DOMAIN, hashlib.sha256)
    mac.update(b"clash\x00k1\x00")
    mac.update(payload)
    assert sealed == seal.MAGIC + bytes((2,)) + b"k1" + mac.digest() + payload
