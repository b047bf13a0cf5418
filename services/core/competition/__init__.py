"""What finished matches feed: ratings, leaderboards and their seasons, the tournaments' due index."""
