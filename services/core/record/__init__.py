"""A match as it is kept: the Redis store and its leases, and who plays each seat. Below every domain."""
