"""Meeple's processes: the rules service, the gateway, the workers and the tools that start them.

One setting is made here because it must be in the environment before any module imports ``grpc``, and every
process of ours imports this package first: grpcio reads ``GRPC_EXPERIMENTS`` once, when it is imported.
grpcio 1.85 runs every call's I/O on its EventEngine's own threads and hands the result to the calling thread;
with the ``event_engine_client`` and ``event_engine_listener`` experiments off it polls on the calling thread
(its iomgr engine), and one call costs fewer thread wake-ups. Measured on the 2-core machine
(``scripts/bench_grpc_floor.py io``, four runs each way): an empty unary call cost the client 195-204 µs of CPU
instead of 277-300, the server 273-331 µs instead of 375-423 (docs/benchmarks.md, with ``meeple bench floor``).
A deployment that sets ``GRPC_EXPERIMENTS`` itself keeps its own value.
"""

import os

#: grpcio's experiments every Meeple process starts with unless the environment names its own.
GRPC_EXPERIMENTS = "-event_engine_client,-event_engine_listener"

os.environ.setdefault("GRPC_EXPERIMENTS", GRPC_EXPERIMENTS)
