# ruff: noqa: RUF001  (text for people: the typographic multiplication, minus and en-dash signs are meant)
"""How to play each game, for people: the goal in one line, then the turn, the components and the scoring with a
worked example, in the server's own words. Written from the specs (``../shared/rules/*.md``) and carried by the
catalogue's ``GET /v1/games/{game}`` as ``rules``, so the page, ``meeple play`` and third-party clients show the
same text. A rule here never decides anything: the engines do."""

from __future__ import annotations

from typing import Any

Section = tuple[str, tuple[str, ...]]

GUIDES: dict[str, tuple[str, tuple[Section, ...]]] = {
    "clash": (
        "Have more tiles supporting you than your opponent when all nine fields are full (and never be the one "
        "KABOOM!!! supports).",
        (
            ("How to win", (
                "Two players: Blue (McWorld, seat 0) and Green (Jihad, seat 1) take turns placing one tile on an "
                "empty field of a 3×3 board. A tile supports the player its base faces: its tip points towards the "
                "other side. A game ends when all nine fields hold face-up tiles; whoever has more supporting tiles "
                "wins it.",
                "A player who cannot place a tile on their turn loses the game. Whatever the reason, if KABOOM!!! "
                "lies face up on the board at the end, the player it supports loses instead.",
                "A match is one game, the best of three (the loser of a game chooses who starts the next), or a "
                "points series.",
            )),
            ("A turn", (
                "Place one tile: from your own zone, or from the shared neutral zone. The very first move of each "
                "game places Mustafa (M0), the purple start tile, on any field. Choose the field and which side the "
                "tile supports: you may even make it support your opponent.",
                "Then you may use the tile's immediate effect, or decline it. Effects destroy, flip, discard or move "
                "neighbouring tiles, repeat another tile's effect, or move tiles between zones. A destroyed tile "
                "stays face down during the opponent's next move, blocking its field, and leaves the board after it.",
            )),
            ("Components", (
                "The board: nine fields in three rows; row 0 is Blue's side, row 2 Green's. Blue's seven tiles B1–B7 "
                "and Green's G1–G7 have the same effects (Bn is Gn). Grey neutral tiles N01–N17 come into the "
                "neutral zone (five per game).",
                "Dots on a tile mark the fields around it that its effect reaches: the Soldier's four orthogonal "
                "neighbours, the Predator's four diagonal ones; the Banker flips every tile at its white dots "
                "(orthogonal) or every tile at its black dots (diagonal); the Social network flips the three fields "
                "in front of its tip; the Picket and the Riots block the fields at their dots. "
                "A tile with Security (B7/G7, a tile covered by the Nobel prize, a tile beside the UN) cannot be "
                "affected. Picket and Riots block the effects of tiles placed next to them.",
            )),
            ("Scoring", (
                "Count the face-up tiles supporting each player (a stack counts once). With a full board the nine "
                "tiles cannot tie. In a points series each game scores its supporting tiles, and the tiles of the "
                "player KABOOM!!! supports score 0.",
            )),
            ("Example", (
                "Blue places the President on the last empty field as the ninth face-up tile. Its destruction may "
                "not be used on the last field, so nothing changes: the board shows Blue 6 : Green 3, and Blue wins "
                "the game.",
                "Earlier in a game, Blue places the President and destroys the Green tile next to it. That tile "
                "lies face down while Green moves, so Green cannot place there, and it is removed after Green's move.",
            )),
        ),
    ),
    "sideboards": (
        "Build the dresser that scores most for the three public goals: two drawer patterns and a row.",
        (
            ("How to win", (
                "Each player builds a dresser: a row of eight cards side by side, each card one column of five "
                "drawers with a colour and maybe a handle. Three goals are public for the whole game: a colour "
                "pattern (goals 1–7), a handle pattern (8–14) and a row goal (15–30). The highest total wins; ties "
                "share the win. Played solo, your total earns a rating band.",
            )),
            ("A turn", (
                "Everyone decides at the same time, and nobody sees another's choice before all have chosen. First, "
                "each player picks two of the three cards in hand as the start of the dresser. Then, six times, "
                "each player picks one card and adds it at the left or right end, upright or turned 180°.",
                "The cards not chosen pass to the left neighbour and everyone draws back up. Once per game, before "
                "you choose, you may play your exchange card: your hand goes to the discard pile and you draw two "
                "new cards, then choose from those.",
            )),
            ("Components", (
                "60 dresser cards S01–S60. Each is a column of five drawers in the five colours red, turquoise, "
                "pink, orange and black, one of each; three of the drawers have a handle, one flower, one square "
                "and one line. One exchange card per player, and 30 goal cards.",
            )),
            ("Scoring", (
                "A pattern goal scores its points for each occurrence in your dresser, rotated or mirrored as you "
                "like, with no drawer used twice. The row goal scores 2 points for each drawer it counts, and the "
                "best rows earn a rank bonus. An exchange card never played is worth 1 more point.",
            )),
            ("Example", (
                "Goals: colour 2 (4 points), handle 9 (3 points), row 19 (longest red run). Lidka's dresser holds "
                "three separate knight shapes of one colour (12), five diagonal handle pairs (15) and a red run of 5 "
                "drawers (10). Her row is only the third best, so no rank bonus; her exchange card is unused (+1). "
                "Total 38.",
            )),
        ),
    ),
    "fierce-women": (
        "Score the most points from columns of women who share exactly one category, in the categories most "
        "players collect.",
        (
            ("How to win", (
                "Two to five players (with two, a scripted third player, the automa, plays too). Each woman card has "
                "one or more categories: art, culture, feminism, human rights, politics, science. The highest score "
                "after the last turn wins; ties share the win.",
            )),
            ("A turn", (
                "Take the top card of one of the three face-up piles into your hand, then play one card: a woman "
                "goes into one of the columns in front of you (a new column or an existing one); with the action "
                "cards option an action card takes effect instead. Every player gets 10 turns (8 with five players).",
            )),
            ("Components", (
                "56 woman cards, each with a name and its categories; three piles to draw from; optionally eight "
                "action cards that change values or remove columns or cards.",
            )),
            ("Scoring", (
                "A column counts only if all the women in it share exactly one category: it is then a column of that "
                "category. Count how many such columns of each category there are on all tables together: each "
                "woman in a column of that category scores that many points. Other columns score nothing, and "
                "cards left in hand score nothing.",
                "So a category that several players collect is worth more to each of them. During the game the "
                "points now shown for each seat are what its columns would score if the game ended now.",
            )),
            ("Example", (
                "Three players. On all tables there are three feminism columns, two politics columns and one "
                "science column. Jagoda has four women in a feminism column (4 × 3 = 12), two in a politics column "
                "(2 × 2 = 4), a column whose two women share no single category (0) and one scientist (1): 17 "
                "points, the win.",
            )),
        ),
    ),
    "they-who-were-8": (
        "Your team's gods should end with more glory and less infamy than the other team's: points = 2 × glory − "
        "infamy − 2 × powers used.",
        (
            ("How to win", (
                "Four players in two teams of partners sitting opposite: seats 0 and 2 against seats 1 and 3. Each "
                "player controls two of the eight gods. The game ends at once when the 15 glory tokens or the 15 "
                "infamy tokens in the supply run out (or after the round limit). The team with more points wins; "
                "equal points are decided by glory, then it is a draw.",
            )),
            ("A turn", (
                "In turn, each player plays one of the two action cards in hand. A card adds, removes, moves or "
                "swaps glory and infamy tokens on the gods of other players. If no card can be played, discard one "
                "and draw. After everyone has played, each player passes the remaining card to the left and is dealt "
                "a new one.",
                "Each god has one power that can be used once per game, at the moments its text names (at the start "
                "of a turn, when targeted, when passing or dealing). A used power costs the team 2 points.",
            )),
            ("Components", (
                "Eight gods with their powers, ten action cards, 15 glory and 15 infamy tokens in the supply.",
            )),
            ("Scoring", (
                "For each team: 2 × the glory on its gods − the infamy on its gods − 2 × the powers it used. Every "
                "player scores the team's points.",
            )),
            ("Example", (
                "Team 0 ends with 8 glory, 5 infamy and one power used: 16 − 5 − 2 = 9. Team 1 has 7 glory, 3 infamy, "
                "one power used: 14 − 3 − 2 = 9. The points are equal, so glory decides: team 0 wins.",
                "A team with 5 glory, 2 infamy and two powers used scores 10 − 2 − 4 = 4, and loses to a team with "
                "3 glory and nothing else (6).",
            )),
        ),
    ),
}


def rules(game_id: str) -> dict[str, Any] | None:
    """The game's rules for people: ``{"goal": one line, "sections": [{"title", "paragraphs"}]}``."""
    guide = GUIDES.get(game_id)
    if guide is None:
        return None
    goal, sections = guide
    return {"goal": goal, "sections": [{"title": t, "paragraphs": list(p)} for t, p in sections]}
