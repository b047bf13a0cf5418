"""Bots: ISMCTS over the engine protocol (``ismcts.py``), levels (``bot.py``), rollout policies, the arena."""

# The search and the policies are compiled with the engines; MEEPLE_PURE_PYTHON=1 (see services/rules/__init__.py)
# must reach them too, whichever package a process imports first.
import services.rules  # noqa: F401
