"""The webhook SSRF guard: a tenant's URL may not make the server reach loopback, private, link-local,
multicast, reserved or unspecified addresses — refused at registration (400 with a precise code) and again at
delivery, where the worker connects to the address it checked (DNS rebinding), unless the operator allows the
network. Real gateway over HTTP, real Redis, a real local receiver; only the name's resolution goes through a
resolver seam in the rebinding test (system DNS is not touched)."""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Iterator

import pytest

from services import redisconn
from services.core.tenancy import webhooks
from services.webhooks.worker import WebhookMetrics, WebhookWorker
from tooling.stack import free_port

from .conftest import Api, GatewayServer, RulesProcess, start_gateway
from .test_backends import as_key, new_key
from .test_webhooks import ALLOW, GAME, LOCAL, Receiver

REFUSED = {
    "127.0.0.1": "loopback", "127.8.9.10": "loopback", "::1": "loopback",
    "0.0.0.0": "unspecified", "::": "unspecified",
    "10.1.2.3": "private", "172.16.0.1": "private", "192.168.1.1": "private", "fc00::1": "private",
    "169.254.169.254": "link-local", "fe80::1": "link-local",
    "224.0.0.1": "multicast", "ff02::1": "multicast", "239.255.255.250": "multicast",
    "240.0.0.1": "private", "100.64.0.1": "not globally routable", "192.0.2.1": "private",
    "::ffff:127.0.0.1": "loopback", "::ffff:10.0.0.1": "private", "2002:7f00:1::": "loopback",
    "64:ff9b::a9fe:a9fe": "link-local",
}
PUBLIC = ("93.184.215.14", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8")


def test_every_non_public_address_kind_is_refused_and_public_ones_pass() -> None:
    for address, kind in REFUSED.items():
        assert webhooks.refusal(ipaddress.ip_address(address)) == kind, address
    for address in PUBLIC:
        assert webhooks.refusal(ipaddress.ip_address(address)) is None, address


def test_a_url_no_delivery_could_use_is_bad_webhook_whatever_the_allow_list() -> None:
    """Checked before the address, even when the operator allows every network (a stored one at delivery too)."""
    everything = webhooks.allowed_networks(["all"])
    for url in ("https://[::1]:99999/h", "https://[::1/h", "https://x:0/", "https://exa mple.com/", "http://a..b/"):
        with pytest.raises(webhooks.AddressRefused) as err:
            webhooks.checked_address(url, everything)
        assert err.value.code == "bad_webhook", url
    for url in ("https://example.com/h", "http://127.0.0.1:8080/x", "http://[::1]:8080/x", "https://exa_mple.com./",
                "https://\u00e9xample.com/", "https://user:pw@example.com:65535/h"):
        assert webhooks.url_problem(url) is None, url


def test_a_malformed_allow_list_stops_the_gateway_at_boot() -> None:
    from services.core.config import Config
    from services.gateway.app import create_app

    with pytest.raises(ValueError, match="not-a-network"):
        create_app(Config(webhook_allow_private=("10.0.0.0/8", "not-a-network")))
    assert webhooks.allowed_networks(["all"]) == webhooks.allowed_networks(["0.0.0.0/0", "::/0"])


@pytest.fixture()
def guarded_gateway(own_redis_url: str, rules: RulesProcess) -> Iterator[GatewayServer]:
    server = start_gateway(own_redis_url, rules.port, anonymous=False)  # no allow-list: the deployed default
    yield server
    server.stop()


def test_registration_refuses_urls_that_reach_non_public_addresses_with_a_precise_code(
        guarded_gateway: GatewayServer, own_redis_url: str) -> None:
    api = Api(guarded_gateway.url)
    key = new_key(own_redis_url, "acme")["key"]
    urls = [f"http://{a}/hook" if ":" not in a else f"http://[{a}]/hook" for a in REFUSED]
    urls += ["http://localhost:8080/hook", "https://127.1/hook", "http://2130706433/hook"]  # names and spellings
    for url in urls:
        reply = api.post("/v1/webhooks", headers=as_key(key), json={"url": url, "events": ["match.finished"]})
        assert reply.status_code == 400, (url, reply.text)
        assert reply.json()["error"]["code"] == "webhook_address_refused", url
    unresolvable = api.post("/v1/webhooks", headers=as_key(key),
                            json={"url": "http://no-such-host.invalid/hook", "events": ["turn"]})
    assert unresolvable.status_code == 400 and unresolvable.json()["error"]["code"] == "webhook_unresolvable"
    assert api.get("/v1/webhooks", headers=as_key(key)).json()["webhooks"] == []  # nothing was kept
    public = api.post("/v1/webhooks", headers=as_key(key), json={"url": "https://93.184.215.14/hook",
                                                                  "events": ["turn"]})
    assert public.status_code == 201, public.text


def test_an_operator_allow_list_admits_exactly_its_networks(own_redis_url: str, rules: RulesProcess) -> None:
    server = start_gateway(own_redis_url, rules.port, anonymous=False, webhook_allow_private=LOCAL)
    try:
        api = Api(server.url)
        key = new_key(own_redis_url, "acme")["key"]
        ok = api.post("/v1/webhooks", headers=as_key(key), json={"url": "http://127.0.0.1:9/", "events": ["turn"]})
        assert ok.status_code == 201, ok.text
        other = api.post("/v1/webhooks", headers=as_key(key), json={"url": "http://10.0.0.1/", "events": ["turn"]})
        assert other.status_code == 400 and other.json()["error"]["code"] == "webhook_address_refused"
    finally:
        server.stop()


def test_a_name_that_resolves_to_loopback_at_delivery_is_refused_and_an_allowed_one_is_reached_at_the_checked_address(
        guarded_gateway: GatewayServer, own_redis_url: str) -> None:
    receiver = Receiver(free_port())
    receiver.start()
    try:
        api = Api(guarded_gateway.url)
        key = new_key(own_redis_url, "acme")["key"]
        client = redisconn.connect(own_redis_url)
        # Registered while the name resolved to a public address (registration checked that); now it rebinds:
        hook = webhooks.register(client, "acme", f"http://rebind.test:{receiver.port}/hook", ["match.created"])
        receiver.secret = hook["secret"]
        asked: list[str] = []

        def rebound(host: str, port: int) -> list[str]:
            asked.append(host)
            return ["127.0.0.1"]

        created = api.post("/v1/matches", headers=as_key(key), json={
            "game": GAME, "players": 2, "seats": [{"kind": "human", "player": "ann"}, {"kind": "human"}]})
        assert created.status_code == 201, created.text
        metrics = WebhookMetrics()
        guarded = WebhookWorker(own_redis_url, metrics, backoff_s=1.0, resolver=rebound)
        guarded.run_once()
        assert asked == ["rebind.test"] and receiver.got == []  # checked, refused, nothing sent
        assert metrics.registry.get_sample_value("meeple_webhook_refused_total") == 1
        assert metrics.registry.get_sample_value("meeple_webhook_deliveries_total", {"outcome": "failed"}) == 1
        # An operator who allows loopback: the retry connects to the address the resolver gave, keeping the name.
        allowed = WebhookWorker(own_redis_url, backoff_s=1.0, resolver=rebound, allow=ALLOW)
        assert allowed.run_once(time.time() + 5) == 1
        assert len(receiver.got) == 1 and receiver.got[0]["valid"] and receiver.got[0]["event"] == "match.created"
        assert receiver.got[0]["host"] == f"rebind.test:{receiver.port}"
    finally:
        receiver.stop()
