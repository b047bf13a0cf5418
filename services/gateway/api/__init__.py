"""The REST API's blueprints, one per resource. What each route asks of the access policy is the contract's
(:data:`services.contract.access.ACCESS`, by this package's endpoint names), re-exported here.
"""

from __future__ import annotations

from services.contract.access import ACCESS

__all__ = ["ACCESS"]
