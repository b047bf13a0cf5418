"""The match core: the domain behind every door (store, commit pipeline, policy, ratings, leaderboards, tournaments)."""
