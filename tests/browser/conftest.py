"""Headless Chromium (Debian's ``chromium`` package; ``make test`` installs it when missing) driven by
Playwright for Python against the whole stack of tests/clients. Playwright never downloads a browser here."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.clients.conftest import Stack, plain_stack, rules, ws_stack  # noqa: F401  (the same fixtures)

CHROMIUM = os.environ.get("MEEPLE_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]


@pytest.fixture(scope="session")
def stack(ws_stack: Stack) -> Stack:  # noqa: F811
    """The page is tested against the deployed shape: gunicorn with the gateway's worker, which holds
    WebSockets (``plain_stack``, werkzeug's server, cannot: there the page must fall back)."""
    return ws_stack


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        pytest.fail("no chromium: `make test` installs Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture()
def new_page(browser: Any, stack: Stack) -> Iterator[Any]:
    """Pages in contexts of their own (separate localStorage: separate people), closed afterwards."""
    contexts: list[Any] = []

    def make(viewport: dict[str, int] | None = None, base_url: str | None = None) -> Any:
        context = browser.new_context(base_url=base_url or stack.url,
                                      viewport=viewport or {"width": 1200, "height": 900})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(30_000)
        return page

    yield make
    for context in contexts:
        context.close()
