"""Sealed state bytes: the rules service vouches for the states it produced with an HMAC-SHA256.

State bytes travel through clients and stores the service does not control, so every state it is handed
is untrusted and ``decode`` validates it fully. A seal lets the service recognise its own output: bytes
whose seal verifies are exactly what some replica encoded, so they skip re-validation; bytes whose seal
fails were altered (or sealed with a key no replica knows) and are refused; unsealed bytes (a third
party's own state) are validated as always.

Layout (binary, so it can never be mistaken for a JSON state)::

    MAGIC (6 bytes) | key id length (1 byte) | key id (ASCII) | MAC (32 bytes) | state bytes

The MAC covers a domain tag, the game id, the key id and the state bytes, so a seal cannot be moved to
another game or another key. Keys come from ``MEEPLE_SEAL_KEYS``: ``id:key[,id:key...]``, the first key
signs, every key verifies (rotate by putting the new key first and dropping the old one once no stored
state is sealed with it); a key is at least 32 bytes written as hex or base64. Every replica must share
them: a state sealed by one is checked by another.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

ENV_VAR = "MEEPLE_SEAL_KEYS"
MAGIC = b"\x93MSL1\x00"
MAC_BYTES = 32
MIN_KEY_BYTES = 32
_DOMAIN = b"meeple.v1.state\x00"
_KEY_ID = re.compile(r"[A-Za-z0-9._-]{1,32}")


class SealError(ValueError):
    """The bytes carry a seal that does not hold (wrong MAC, unknown key id, truncated)."""


def is_sealed(data: bytes) -> bool:
    return data[:len(MAGIC)] == MAGIC


def strip(data: bytes) -> bytes:
    """The state inside sealed bytes, unchecked (for holders of no key, who validate it in full anyway)."""
    if not is_sealed(data):
        return data
    _, _, payload = _split(data)
    return payload


def _split(data: bytes) -> tuple[str, bytes, bytes]:
    start = len(MAGIC)
    if len(data) < start + 1:
        raise SealError("sealed state is truncated")
    kid_len = data[start]
    kid_end = start + 1 + kid_len
    if kid_len == 0 or len(data) < kid_end + MAC_BYTES:
        raise SealError("sealed state is truncated")
    try:
        kid = data[start + 1:kid_end].decode("ascii")
    except UnicodeDecodeError:
        raise SealError("sealed state has a malformed key id") from None
    return kid, data[kid_end:kid_end + MAC_BYTES], data[kid_end + MAC_BYTES:]


def parse_key(text: str) -> bytes:
    """A key written as hex or base64 (standard or URL-safe); at least :data:`MIN_KEY_BYTES` bytes."""
    text = text.strip()
    raw: bytes | None = None
    if re.fullmatch(r"(?:[0-9a-fA-F]{2})+", text):
        raw = bytes.fromhex(text)
    else:
        try:
            raw = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_" if "-" in text or "_" in text
                                   else None, validate=True)
        except (binascii.Error, ValueError):
            raw = None
    if raw is None or len(raw) < MIN_KEY_BYTES:
        raise ValueError(f"a seal key must be at least {MIN_KEY_BYTES} bytes, written as hex or base64")
    return raw


@dataclass(frozen=True)
class Sealer:
    """The keys of a replica: ``signing`` seals, every key in ``keys`` verifies. No keys: sealing is off."""

    keys: Mapping[str, bytes] = field(default_factory=dict)
    signing: str | None = None

    @classmethod
    def from_spec(cls, spec: str | None) -> Sealer:
        """Parse ``id:key[,id:key...]`` (the first signs); empty or ``None`` means no sealing."""
        if not spec or not spec.strip():
            return cls()
        keys: dict[str, bytes] = {}
        for item in spec.split(","):
            kid, sep, key = item.strip().partition(":")
            if not sep or not _KEY_ID.fullmatch(kid):
                raise ValueError(f"{ENV_VAR}: each entry is id:key with an id of 1-32 letters, digits, '.', '_', '-'")
            if kid in keys:
                raise ValueError(f"{ENV_VAR}: key id {kid!r} appears twice")
            keys[kid] = parse_key(key)
        return cls(keys, next(iter(keys)))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Sealer:
        return cls.from_spec((os.environ if environ is None else environ).get(ENV_VAR))

    @property
    def enabled(self) -> bool:
        return self.signing is not None

    @staticmethod
    def _mac(key: bytes, game: str, kid: str, payload: bytes) -> bytes:
        # hmac.digest: OpenSSL's one-shot HMAC, the same MAC as hmac.new(...).update(...) without its Python
        # object and calls (the rules service seals every reply and checks every request).
        message = b"".join((_DOMAIN, game.encode(), b"\x00", kid.encode(), b"\x00", payload))
        return hmac.digest(key, message, "sha256")

    def seal(self, game: str, payload: bytes) -> bytes:
        if self.signing is None:
            return payload
        kid = self.signing
        return b"".join((MAGIC, bytes((len(kid),)), kid.encode(), self._mac(self.keys[kid], game, kid, payload),
                         payload))

    def open(self, game: str, data: bytes) -> tuple[bytes, bool]:
        """``(state bytes, trusted)``: trusted when the seal verified; unsealed bytes come back untrusted.

        Raises :class:`SealError` when the bytes are sealed and the seal fails. With sealing off, sealed
        bytes are unwrapped and left to full validation, so turning the seal off never strands a stored match.
        """
        if not is_sealed(data):
            return data, False
        kid, mac, payload = _split(data)
        if not self.enabled:
            return payload, False
        key = self.keys.get(kid)
        if key is None:
            raise SealError(f"state is sealed with key id {kid!r}, which this service does not hold "
                            f"(it holds: {', '.join(self.keys)})")
        if not hmac.compare_digest(mac, self._mac(key, game, kid, payload)):
            raise SealError("state seal does not verify: the bytes were altered or sealed for another game")
        return payload, True


def new_key_spec(kid: str = "k1") -> str:
    """A fresh ``id:key`` entry with a 256-bit random key (hex)."""
    return f"{kid}:{os.urandom(32).hex()}"
