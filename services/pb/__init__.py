"""Generated from proto/meeple/v1 by `make proto`. Do not edit."""
