"""The README stays short and its links land: every relative link names a file that exists, and an anchor one of
its headings (the docs site itself is built with ``mkdocs build --strict`` by make test, which checks the rest)."""

from __future__ import annotations

import re

from tooling.stack import ROOT


def _slug(heading: str) -> str:
    """A heading's anchor as MkDocs' toc extension makes it."""
    text = re.sub(r"[`*_]", "", heading).strip().lower()
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"[\s]+", "-", text)


def test_the_readme_is_short_and_each_of_its_links_lands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    links = re.findall(r"\]\(([^)]+)\)", readme)
    assert links
    for link in links:
        if "://" in link:
            continue
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.exists(), link
        if anchor:
            headings = re.findall(r"(?m)^#+\s+(.+)$", target.read_text())
            assert anchor in {_slug(h) for h in headings}, link


def test_the_pages_other_helpers_write_are_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in ("engines/compiled.md", "bots/strength.md", "operators/deployment.md", "guides/playing.md",
                 "api.md", "benchmarks.md"):
        assert page in nav and (ROOT / "docs" / page).exists(), page
