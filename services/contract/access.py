"""What each route asks of the access policy: :data:`ACCESS` names, per Flask endpoint (``blueprint.view``), the
:class:`~services.core.access.Action` its core call is decided as (None: an operations or documentation route that
reads no credential).

The contract's routes (``routes.py``) take their security requirements from it, docs/api.md's "Who may do what"
table is made from it and the policy's own words (``access.RULES``), and the authorization matrix test
(tests/gateway/test_access_matrix.py) holds every route the gateway serves, and the WebSocket, to it.
"""

from __future__ import annotations

from services.core.access import Action

ACCESS: dict[str, Action | None] = {
    "games.list_games": Action.CATALOGUE,
    "games.game_components": Action.CATALOGUE,
    "matches.create_match": Action.CREATE,
    "matches.join": Action.JOIN,
    "matches.get_match": Action.READ,
    "matches.replay": Action.READ,
    "events.long_poll": Action.READ,  # until=turn: ACT (the caller's own turn)
    "events.stream": Action.READ,
    "ws.websocket": Action.READ,  # decided at the upgrade (a credential in headers) or at the hello
    "matches.legal_moves": Action.ACT,
    "matches.submit_move": Action.ACT,
    "matches.hint": Action.ACT,
    "chat.post_chat": Action.CHAT,
    "chat.redact_chat": Action.MODERATE,
    "seats.leave": Action.ACT,
    "seats.resign": Action.ACT,
    "seats.reclaim": Action.ACT,
    "seats.rematch": Action.ACT,
    "matchmaking.enqueue": Action.CREATE,
    "matchmaking.poll": Action.TICKET,
    "matchmaking.cancel": Action.TICKET,
    "backends.tenant_matches": Action.TENANT,
    "backends.player_matches": Action.TENANT,
    "backends.player_ratings": Action.TENANT,
    "backends.add_webhook": Action.TENANT,
    "backends.list_webhooks": Action.TENANT,
    "backends.delete_webhook": Action.TENANT,
    "backends.dead_letters": Action.TENANT,
    "backends.clear_dead_letters": Action.TENANT,
    # a tenant's boards and seasons are its own data (another key reads its own); a tournament is its tenant's alone
    "leaderboards.leaderboard": Action.TENANT,
    "leaderboards.leaderboard_player": Action.TENANT,
    "leaderboards.leaderboard_around": Action.TENANT,
    "leaderboards.leaderboard_settings": Action.TENANT,
    "leaderboards.set_leaderboard_settings": Action.TENANT,
    "leaderboards.seasons": Action.TENANT,
    "leaderboards.create_season": Action.TENANT,
    "leaderboards.season": Action.TENANT,
    "leaderboards.update_season": Action.TENANT,
    "leaderboards.delete_season": Action.TENANT,
    "tournaments.create_tournament": Action.TENANT,
    "tournaments.list_tournaments": Action.TENANT,
    "tournaments.get_tournament": Action.TOURNAMENT,
    "tournaments.register": Action.TOURNAMENT,
    "tournaments.tournament_rounds": Action.TOURNAMENT,
    "tournaments.tournament_player": Action.TOURNAMENT,
    "tournaments.unregister": Action.TOURNAMENT,
    "tournaments.cancel": Action.TOURNAMENT,
    # watch links: minted by the key of the match's (or tournament's) tenant, described and revoked by the minter's
    "watch.mint_for_match": Action.SHARE,
    "watch.mint_for_tournament": Action.TOURNAMENT,
    "watch.describe": Action.WATCH_TOKEN,
    "watch.revoke": Action.WATCH_TOKEN,
    # operations and documentation: no credential is read (the WebSocket URL without an upgrade answers 426)
    "ws.plain": None,
    "ops.healthz": None,
    "ops.readyz": None,
    "ops.metrics": None,
    "ops.openapi": None,
    "play.play": None,
    "play.play_file": None,
    "play.docs": None,
    "swagger_ui.show": None,
}
