"""The timekeeper: enforces seat-clock deadlines (``meeple serve timekeeper``)."""
