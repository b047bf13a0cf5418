"""The Locust request names that the runner and the report read back, written once for the locustfile and them."""

#: A move submission (its time is the move latency the targets are about).
MOVE = "move"
#: A move sent with ``wait``: a human move too, but its time includes the wait for the next turn (no move latency).
MOVE_AND_WAIT = "move (and wait for turn)"
