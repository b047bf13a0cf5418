"""The webhook worker: ``meeple serve webhooks`` (see :mod:`services.webhooks.worker`)."""
