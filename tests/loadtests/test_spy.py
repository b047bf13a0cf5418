"""py-spy's collapsed stacks, read into the profile's categories."""

from __future__ import annotations

from loadtests.spy import categorize

FLASK = "Flask.wsgi_app (flask/app.py:1511)"


def test_a_frame_label_that_spans_lines_is_one_record_not_a_crash() -> None:
    # py-spy prints a local's repr in a frame's label; a werkzeug proxy outside a request has one with newlines
    lines = [f"Thread.run (threading.py:982);{FLASK};caller (services/gateway/context.py:51) (Working outside",
             "",
             "of application context.) 3",
             f"Thread.run (threading.py:982);{FLASK} 2"]
    spent = categorize(lines, rules=False)
    assert sum(spent.values()) == 5
