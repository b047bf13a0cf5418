"""The backends that integrate Meeple: tenants and their keys, quotas, webhooks. Imports nothing of the core."""
