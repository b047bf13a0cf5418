"""``meeple keys create|list|revoke``: the operator's API-key admin, straight against Redis (``REDIS_URL``).

A key is printed once, by ``create``; Redis keeps only its hash (see ``services/core/tenancy/tenants.py``).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import orjson

from services import redisconn
from services.core.tenancy import tenants


def run(args: argparse.Namespace) -> int:
    client = redisconn.connect(args.redis_url)
    if args.action == "create":
        if not args.name:
            print("keys create needs --name", file=sys.stderr)
            return 2
        try:
            key, record = tenants.create_key(client, args.name, tenants.parse_quota(args.quota))
        except ValueError as err:
            print(err, file=sys.stderr)
            return 2
        if args.json:
            print(orjson.dumps({**record, "key": key}).decode())
        else:
            print(f"tenant {record['tenant']}: key {record['key_id']} (shown once, keep it secret):\n{key}\n"
                  f"quotas: {', '.join(f'{k}={v}' for k, v in record['quotas'].items())} (0 = no limit)")
        return 0
    if args.action == "list":
        rows = tenants.list_keys(client)
        if args.json:
            print(orjson.dumps(rows).decode())
        for row in [] if args.json else rows:
            state = "revoked" if row["revoked_at"] else "active"
            print(f"{row['key_id']}  {row['tenant']:<24} {state:<8} "
                  f"{', '.join(f'{k}={v}' for k, v in row['quotas'].items())}")
        return 0
    if not args.key_id:
        print("keys revoke needs the key id (from keys list) or the key", file=sys.stderr)
        return 2
    if not tenants.revoke(client, args.key_id):
        print(f"no key {args.key_id!r}", file=sys.stderr)
        return 1
    print(f"revoked {args.key_id}")
    return 0


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("keys", help="API keys of tenants (backends): create, list, revoke",
                            description="Tenants' API keys, stored hashed in Redis. A tenant's keys share its "
                                        "quotas: " + ", ".join(f"{k} (default {v})"
                                                              for k, v in tenants.DEFAULT_QUOTAS.items()))
    parser.add_argument("action", choices=("create", "list", "revoke"))
    parser.add_argument("key_id", nargs="?", help="revoke: the key id (or the whole key)")
    parser.add_argument("--name", help="create: the tenant the key acts for (made on first use)")
    parser.add_argument("--quota", help="create: set the tenant's quotas, e.g. rpm=600,matches=50,bots=100,"
                                        "hard=10,hints=60 (0 = no limit)")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
                        help="the store (default: $REDIS_URL, else redis://127.0.0.1:6379/0)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)
