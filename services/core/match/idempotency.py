"""``Idempotency-Key`` for the writes that make things — create, join, matchmaking enqueue — as moves have it:
the same key with the same request answers the first answer again; the same key with another request is
422 ``idempotency_key_reused``. So an SDK may resend any of them after a lost connection (a gateway's restart,
a failover) and get one match, one seat, one ticket.

A move's record lives in its match's slot and commits with the move (``moves.py``). The writes here make
something that does not exist yet, so each first **claims** its key (``SET NX``) with what it will make, chosen
up front — the match or ticket id, the seat token's secret — and then makes it and **completes** the record
with its answer. A retry that finds the record:

* completed: answers its answer (with the seat token, see below);
* claimed, and what it names exists: the first request got that far; the retry finishes the work (a join
  the first never made) and answers from what exists now;
* claimed, nothing made, younger than :data:`PENDING_S`: the first may still be running: 409
  ``idempotency_key_in_use`` (retry after a second);
* claimed, nothing made, older: the first died before making anything; the retry makes it, with the same
  ids (a match is created by a compare-and-set from version -1, so it is never made twice).

Seat tokens are secrets the store otherwise keeps only as hashes. A record therefore never holds one usable:
the token's secret is sealed (AES-GCM, from ``cryptography``) with a key derived from the Idempotency-Key
itself, and the record's name carries only a digest of that key. Whoever can read Redis but does not know a
client's Idempotency-Key cannot take its seat.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import time
from dataclasses import dataclass
from typing import Any

import orjson
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from services.core.errors import DomainError, Kind

#: How long the records are kept (as a move's): a retry within this answers the first answer.
TTL_S = 24 * 3600
#: A claimed record this young may belong to a request still running: a retry is told to wait.
PENDING_S = 10.0


def digest(key: str) -> str:
    """What a record's name carries of the key (never the key: it also seals the token)."""
    return hashlib.sha256(b"meeple-idempotency-name\0" + key.encode()).hexdigest()[:32]


def fingerprint(route: str, request: dict[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps([route, request], option=orjson.OPT_SORT_KEYS)).hexdigest()


def _aead(key: str) -> AESGCM:
    return AESGCM(hashlib.sha256(b"meeple-idempotency-seal\0" + key.encode()).digest())


def seal(key: str, secret: str) -> str:
    nonce = os.urandom(12)
    return base64.urlsafe_b64encode(nonce + _aead(key).encrypt(nonce, secret.encode(), None)).decode()


def unseal(key: str, sealed: str) -> str:
    raw = base64.urlsafe_b64decode(sealed)
    return _aead(key).decrypt(raw[:12], raw[12:], None).decode()


def caller_record(owner: str, route: str, key: str) -> str:
    """A record in the caller's own slot (the thing it makes does not exist yet). Keys are the caller's own
    (its tenant's, or its address's without a key): another caller's same key is another record."""
    return f"idem:{{{owner}}}:{route}:{digest(key)}"


def match_record(match_id: str, owner: str, key: str) -> str:
    """A join's record, in the match's slot, of the caller ``owner``."""
    return f"match:{{{match_id}}}:idem:join:{digest(owner + chr(0) + key)}"


@dataclass
class Claim:
    """One Idempotency-Key's record, as this request found or made it."""

    client: Any
    name: str
    key: str
    record: dict[str, Any]
    #: This request claimed the key: nobody made anything yet.
    fresh: bool

    @property
    def secret(self) -> str:
        """The seat token's secret this key makes (the same on every retry)."""
        return unseal(self.key, self.record["secret"])

    @property
    def answer(self) -> dict[str, Any] | None:
        """The completed answer, with its seat token unsealed (None while the record is only claimed)."""
        body = self.record.get("body")
        if body is None:
            return None
        token = self.record.get("token")
        found = {**body, "token": unseal(self.key, token)} if token else dict(body)
        sealed = self.record.get("party_tokens")
        if sealed:  # a matchmaking party's members' tokens
            found["party"] = [{**m, "token": unseal(self.key, t) if t else None}
                              for m, t in zip(found["party"], sealed, strict=True)]
        return found

    def young(self) -> bool:
        return time.time() - float(self.record["at"]) < PENDING_S

    def in_use(self) -> DomainError:
        return DomainError(Kind.CONFLICT, "idempotency_key_in_use", "a request with this Idempotency-Key is still "
                                                                    "being answered; retry shortly", retry_after=1)

    def forget(self) -> None:
        """Drop a claim whose request was refused before it made anything: a retry is a new request."""
        if self.fresh:
            self.client.delete(self.name)

    def complete(self, answer: dict[str, Any]) -> dict[str, Any]:
        """Store ``answer`` as this key's answer (its seat token sealed, and a party's members' tokens); returns it.
        An answer without a token yet (a waiting ticket's ``token: null``) is kept as it is, so the retry answers
        the same fields."""
        token = answer.get("token")
        body = {k: v for k, v in answer.items() if k != "token"} if token else dict(answer)
        record = {**self.record, "body": body, **({"token": seal(self.key, token)} if token else {})}
        party = answer.get("party")
        if party and any(m.get("token") for m in party):  # each member's token sealed as the first one is
            record["party_tokens"] = [seal(self.key, m["token"]) if m.get("token") else None for m in party]
            body["party"] = [{**m, "token": None} for m in party]
        self.client.set(self.name, orjson.dumps(record), ex=TTL_S)
        return answer


def claim(client: Any, name: str, key: str, request_fingerprint: str, made: dict[str, Any]) -> Claim:
    """The record of ``key`` at ``name``: this request's claim (``made``: the ids it will make; a fresh seat
    token secret is added), or the record an earlier request with the same key left (422 if that request
    was another)."""
    for _ in range(3):
        record = {"fingerprint": request_fingerprint, "at": time.time(), **made,
                  "secret": seal(key, secrets.token_urlsafe(32))}
        if client.set(name, orjson.dumps(record), nx=True, ex=TTL_S):
            return Claim(client, name, key, record, True)
        raw = client.get(name)
        if raw is None:
            continue  # it expired between the two calls
        found = orjson.loads(raw)
        if found["fingerprint"] != request_fingerprint:
            raise DomainError(Kind.ILLEGAL, "idempotency_key_reused", "that Idempotency-Key was used with another "
                                                                      "request")
        return Claim(client, name, key, found, False)
    raise DomainError(Kind.CONFLICT, "busy", "the Idempotency-Key's record changed too often; retry")
