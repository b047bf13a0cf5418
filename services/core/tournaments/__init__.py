"""Tournaments: Swiss and arena events of a tenant's players, with bots in the byes and the no-shows' seats.

* :mod:`.port` -- the interface to the match core the runner needs (a Protocol);
* :mod:`.pairing` -- who plays whom (pure);
* :mod:`.scoring` -- table points, bot fairness, standings and tie-breaks (pure);
* :mod:`.machine` -- the state machine (pure): registration, rounds, deadlines, arena waves, events;
* :mod:`.store` -- the state in Redis: one slot per tournament, a sharded due index with leases;
* :mod:`.runner` -- drives due tournaments through the port.

See docs/guides/leaderboards-tournaments.md.
"""
