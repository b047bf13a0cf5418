"""The match core: everything a match is and may do, behind every door (HTTP, realtime, workers)."""
