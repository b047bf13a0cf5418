"""A match and everything that changes it: open, create, seats, moves, the one commit, reads, events,
clocks, hints, rematch, replay, matchmaking."""
