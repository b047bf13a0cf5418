"""``meeple arena``: the arena's parser, with the ladder's options (``--ladder``, issue 20) and the calibration's
(``--calibrate``).

Put together here, above the three, so that the arena (players, matches, statistics) knows neither the ladder nor
the calibration, and the ladder (which plays arena matches) not the calibration (which runs ladders).
"""

from __future__ import annotations

import argparse
from typing import Any

from . import arena, calibrate, ladder


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add ``arena`` to a subparsers object (services/cli.py adds optional subcommands this way)."""
    parser = arena.add_arena_parser(sub)
    ladder.add_options(parser)
    calibrate.hook(parser)
    ladder.route(parser)
    return parser
