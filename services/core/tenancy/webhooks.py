"""Signed webhooks, the match core's half: which events an update makes, the outbox, and tenants' registrations.

**Outbox.** A tenant's match gets its events in a Redis Stream in the match's own Cluster slot,
``match:{<id>}:outbox``, appended by the *same* compare-and-set script that makes the change
(:mod:`services.core.record.store`): an event exists if and only if its change does, whatever process dies.

**Pending index.** The worker (``meeple serve webhooks``, :mod:`services.webhooks`) finds outboxes with
something in them through the pending set of the match's own Cluster slot, ``webhooks:pending:{<tag>}`` (the
tag :func:`services.redisconn.slot_tags` gives for that slot; member = match id, score = when it was last
marked): a commit on a healthy primary never needs another one (issue 28; a set per slot in use, which the
worker scans node by node). The mark is written *before* the compare-and-set, so a crash in between leaves a
mark with an empty outbox (the worker drops it), never an outbox nobody will look at. The worker unmarks a
drained outbox only if the mark is older than :data:`MARK_GRACE_S` and unchanged since it looked (one script
on the set): an update whose mark came just before the worker drained will have appended by then, so its
event is never stranded. Gateways before this layout marked ``{webhooks:<crc32 % 16>}:pending``
(:func:`legacy_pending_key`): the worker still drains those.

**Deliveries.** One per (event, subscribed hook): ``whd:{<delivery id>}`` (the request to make, its attempts),
due in ``{webhooks:<k>}:due`` and leased to a sender in ``{webhooks:<k>}:leases`` (:func:`add_delivery`; the
worker, :mod:`services.webhooks.worker`, sends them). A match's events become deliveries when the worker pumps
its outbox; a tournament's when its runner hands them over (:func:`tournament_deliveries`), from the tournament's
own outbox, saved with the state change that makes them (:mod:`services.core.tournaments.store`).

**Registrations.** ``wh:{<tenant>}:hooks`` (hash: hook id -> JSON url, events, secret, created_at) and the
tenant's dead letters ``wh:{<tenant>}:dead`` (newest first, at most :data:`DEAD_KEEP`).

**Where deliveries may go (SSRF guard).** A tenant's URL must not make the server reach into its own network:
a host that is, or resolves to, a loopback, private, link-local, multicast, reserved, unspecified or other
non-global address (IPv4 or IPv6; an IPv6 address embedding an IPv4 one — mapped, 6to4, Teredo, NAT64 — is
judged by the IPv4 one) is refused at registration, and again at every delivery, which then connects to the
address it checked (a name that resolved to a public address at registration and to 127.0.0.1 later is
refused, not followed). ``MEEPLE_WEBHOOK_ALLOW_PRIVATE`` lists networks (CIDR) the operator allows anyway, or
``all`` to turn the guard off (``make run`` and the tests do, for a receiver on 127.0.0.1).
"""

from __future__ import annotations

import ipaddress
import re
import secrets
import socket
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import orjson

from services import redisconn
from services.core.meta import MatchMeta

#: Every event a hook may subscribe to. ``turn``: a seat must decide (one per version: chatty, opt-in).
#: ``chat.message`` / ``chat.redacted``: a chat message posted / redacted (:mod:`.chat` appends them).
MATCH_EVENTS = ("match.created", "match.started", "match.finished", "seat.timeout", "seat.taken_over",
                "seat.reclaimed", "turn", "chat.message", "chat.redacted")
#: A tournament's events (:mod:`services.core.tournaments.machine`), delivered by the same worker, the same way.
TOURNAMENT_EVENTS = ("tournament.started", "round.started", "round.finished", "tournament.finished")
EVENTS = MATCH_EVENTS + TOURNAMENT_EVENTS
#: A delivery's record is kept this long at most (the worker gives up on it after its ``retry_for_s``, a day).
DELIVERY_KEEP_S = 2 * 24 * 3600
SHARDS = 16
MARK_GRACE_S = 60.0
DEAD_KEEP = 1000
#: Hooks per tenant, and the longest URL.
MAX_HOOKS = 20
MAX_URL = 2048

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
#: host, port -> the addresses it resolves to (a seam: tests make a name "rebind" without touching DNS).
Resolver = Callable[[str, int], list[str]]
_EVERYTHING = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class AddressRefused(Exception):
    """A webhook URL whose host deliveries must not reach; ``code`` is the API's error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def allowed_networks(items: Sequence[str]) -> tuple[Network, ...]:
    """``MEEPLE_WEBHOOK_ALLOW_PRIVATE``'s items: CIDR networks, or ``all`` (also ``1``) for every address."""
    nets: list[Network] = []
    for item in items:
        nets += _EVERYTHING if item.strip().lower() in ("all", "1", "true", "yes") else [
            ipaddress.ip_network(item.strip(), strict=False)]
    return tuple(nets)


def refusal(ip: Address) -> str | None:
    """Why deliveries may not reach ``ip`` (None: a global unicast address)."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None) or (
            ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF) if ip in _NAT64 else None)
        if inner is not None:
            return refusal(inner)
    for kind in ("loopback", "unspecified", "link_local", "multicast", "private", "reserved"):
        if getattr(ip, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if ip.is_global else "not globally routable"


#: A host name's label (RFC 1123, plus ``_``, which some providers' hosts carry), once IDNA-encoded.
_LABEL = re.compile(r"(?!-)[A-Za-z0-9_-]{1,63}(?<!-)")


def url_problem(url: str) -> str | None:
    """What makes ``url`` one no delivery could use (None: fine): http(s) only, a host that is an IP address or a
    DNS name, a port 1-65535, no whitespace or control characters. Checked at registration whatever
    ``MEEPLE_WEBHOOK_ALLOW_PRIVATE`` says: a bad URL would only be retried for a day into the dead letters."""
    if len(url) > MAX_URL:
        return f"url must be at most {MAX_URL} characters"
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        return "url must not contain whitespace or control characters"
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:  # an unclosed [IPv6] host, a port that is no number or past 65535
        return "url must be an http(s) URL with a host and, if given, a port 1-65535"
    if parts.scheme not in ("http", "https") or not host or port == 0:
        return "url must be an http(s) URL with a host and, if given, a port 1-65535"
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    try:
        ascii_host = host.rstrip(".").encode("idna").decode("ascii")
    except UnicodeError:
        return f"url's host {host!r} is not a valid host name"
    if len(ascii_host) > 253 or not all(_LABEL.fullmatch(label) for label in ascii_host.split(".")):
        return f"url's host {host!r} is not a valid host name"
    return None


def resolve(host: str, port: int) -> list[str]:
    return [str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


def _addresses(host: str, port: int, resolver: Resolver) -> list[Address]:
    """``host`` itself when it is an address literal, else what it resolves to (an error: refused)."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        return [ipaddress.ip_address(a.partition("%")[0]) for a in resolver(host, port)]
    except (OSError, UnicodeError, ValueError) as err:
        raise AddressRefused("webhook_unresolvable", f"{host} does not resolve ({err})") from None


def checked_address(url: str, allow: Sequence[Network], resolver: Resolver = resolve) -> str | None:
    """The address a delivery to ``url`` connects to, every address of its host checked; None when the
    operator allows every address (no check: the HTTP client resolves). Raises :class:`AddressRefused` (code
    ``bad_webhook`` for a URL no delivery could use, :func:`url_problem`: one stored before that check existed)."""
    problem = url_problem(url)
    if problem is not None:
        raise AddressRefused("bad_webhook", problem)
    if all(net in allow for net in _EVERYTHING):
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    found = _addresses(host, parts.port or (443 if parts.scheme == "https" else 80), resolver)
    if not found:
        raise AddressRefused("webhook_unresolvable", f"{host} does not resolve")
    for ip in found:
        reason = refusal(ip)
        if reason and not any(ip in net for net in allow if net.version == ip.version):
            raise AddressRefused("webhook_address_refused", f"{host} is {ip} ({reason}): webhooks reach public "
                                                            "addresses only (the operator may allow networks in "
                                                            "MEEPLE_WEBHOOK_ALLOW_PRIVATE)")
    return str(found[0])


def outbox_key(match_id: str) -> str:
    return f"match:{{{match_id}}}:outbox"


def pending_key(slot: int) -> str:
    """The pending set of Cluster slot ``slot`` (in that slot)."""
    return f"webhooks:pending:{{{redisconn.slot_tags()[slot]}}}"


def mark_key(match_id: str) -> str:
    """Where the match's outbox is marked pending: the set of the match's own slot."""
    return pending_key(redisconn.slot_of(outbox_key(match_id)))


def legacy_pending_key(shard: int) -> str:
    """Where gateways marked outboxes before the per-slot sets (any primary): drained, no longer written."""
    return f"{{webhooks:{shard}}}:pending"


def shard_of(match_id: str) -> int:
    """The shard of the worker's delivery queues (``{webhooks:<k>}:due``) a match's deliveries go to."""
    return zlib.crc32(match_id.encode()) % SHARDS


def hooks_key(tenant: str) -> str:
    return f"wh:{{{tenant}}}:hooks"


def dead_key(tenant: str) -> str:
    return f"wh:{{{tenant}}}:dead"


def events_of(before: MatchMeta | None, after: MatchMeta, entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The webhook events an update of a tenant's match makes (none for other matches)."""
    if not after.tenant:
        return []
    out: list[dict[str, Any]] = []
    was = None if before is None else before.status
    status, kind, seat = after.status, entry["kind"], entry.get("seat")
    if before is None:
        out.append({"type": "match.created"})
    if status == "active" and was != "active":
        out.append({"type": "match.started"})
    if kind == "timeout":
        out.append({"type": "seat.timeout", "seat": seat, "policy": entry.get("policy")})
        if entry.get("policy") == "bot":
            out.append({"type": "seat.taken_over", "seat": seat, "reason": "timeout"})
    if kind == "left" and was == "active":
        out.append({"type": "seat.taken_over", "seat": seat, "reason": "left"})
    if kind == "resigned":
        out.append({"type": "seat.taken_over", "seat": seat, "reason": "resigned"})
    if kind == "reclaimed":
        out.append({"type": "seat.reclaimed", "seat": seat})
    if status == "finished" and was != "finished":
        out.append({"type": "match.finished", "result": after.result,
                    "outcome": after.outcome.doc() if after.outcome is not None else None})
    elif status == "active" and after.to_act and (was != "active" or kind == "move"):
        out.append({"type": "turn", "to_act": after.to_act})
    return out


def outbox_record(match_id: str, version: int, meta: MatchMeta, events: list[dict[str, Any]]) -> bytes:
    """What the compare-and-set appends: the events with what a receiver needs to place them."""
    seats = [{"seat": i, "kind": s.kind, "player": s.player} for i, s in enumerate(meta.seats)]
    return orjson.dumps({"tenant": meta.tenant, "match_id": match_id, "game": meta.game, "version": version,
                         "at": time.time(), "seats": seats, "events": events})


def due_key(shard: int) -> str:
    return f"{{webhooks:{shard}}}:due"


def leases_key(shard: int) -> str:
    return f"{{webhooks:{shard}}}:leases"


def delivery_key(delivery_id: str) -> str:
    return f"whd:{{{delivery_id}}}"


def add_delivery(client: Any, delivery_id: str, tenant: str, hook: dict[str, Any], event_type: str,
                 body: dict[str, Any], first_at: float, shard: int, keep_s: float = DELIVERY_KEEP_S) -> bool:
    """Make one delivery, due at once: its record (written with NX, so making it again after a crash makes no
    second one) and its entry in the shard's due set. A record made before a crash that kept it from being due
    is put in the due set now (unless a sender holds it). Returns whether the record is new.

    Due at once means by this machine's clock: an event stamped ahead of it (another machine's clock, a clock
    stepped back since) is not held back until then."""
    doc = {"id": delivery_id, "tenant": tenant, "hook": hook["id"], "url": hook["url"], "type": event_type,
           "body": orjson.dumps(body).decode(), "first_at": first_at, "attempts": 0, "shard": shard}
    due = min(first_at, time.time())
    if client.set(delivery_key(delivery_id), orjson.dumps(doc), nx=True, ex=int(keep_s)):
        client.zadd(due_key(shard), {delivery_id: due})
        return True
    if client.zscore(leases_key(shard), delivery_id) is None:
        client.zadd(due_key(shard), {delivery_id: due}, nx=True)
    return False


def tournament_deliveries(client: Any, tenant: str, event_id: str, event: dict[str, Any]) -> int:
    """A tournament's event, one delivery per hook of ``tenant`` subscribed to its type; the same ``event_id``
    (``<tournament>:<n>``) makes the same deliveries, so handing an event over again sends nothing twice.
    The body: ``{"id": <event id>, "type", "created_at", "data": {"tournament_id", "at", ...the event's
    fields}}``; the delivery's own id (``Meeple-Delivery``) is ``<event id>-<hook id>`` (one per hook)."""
    made = 0
    shard = shard_of(str(event["tournament_id"]))
    for hook in hooks(client, tenant):
        if event["type"] not in hook["events"]:
            continue
        delivery_id = f"{event_id}-{hook['id']}"
        body = {"id": event_id, "type": event["type"], "created_at": event["at"],
                "data": {k: v for k, v in event.items() if k != "type"}}
        made += add_delivery(client, delivery_id, tenant, hook, event["type"], body, float(event["at"]), shard)
    return made


def mark(client: Any, match_id: str) -> None:
    """Mark the match's outbox as pending (before the compare-and-set that appends to it)."""
    client.zadd(mark_key(match_id), {match_id: time.time()})


# -- registrations ---------------------------------------------------------------------------------------------
def register(client: Any, tenant: str, url: str, events: list[str]) -> dict[str, Any]:
    """A new hook; the returned document carries its signing secret, shown this once."""
    hook = {"id": secrets.token_hex(8), "url": url, "events": events, "secret": f"whsec_{secrets.token_urlsafe(32)}",
            "created_at": time.time()}
    client.hset(hooks_key(tenant), hook["id"], orjson.dumps(hook))
    return hook


def hooks(client: Any, tenant: str) -> list[dict[str, Any]]:
    raw: dict[Any, Any] = client.hgetall(hooks_key(tenant))
    return sorted((orjson.loads(v) for v in raw.values()), key=lambda h: h["created_at"])


def unregister(client: Any, tenant: str, hook_id: str) -> bool:
    return bool(client.hdel(hooks_key(tenant), hook_id))


def public(hook: dict[str, Any]) -> dict[str, Any]:
    return {k: hook[k] for k in ("id", "url", "events", "created_at")}


def dead_letters(client: Any, tenant: str, limit: int) -> list[dict[str, Any]]:
    return [orjson.loads(raw) for raw in client.lrange(dead_key(tenant), 0, limit - 1)]
