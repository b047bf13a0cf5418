"""Bot matches through a fault: sampled from the store, classified by where their data lives.

A bot worker that waits on one match while that match's Redis primary fails over holds up every other
bot match too. To see whether it does, an observer reads each bot match's version (and status) from the
store every ``every_s`` (0.5 s), and remembers the cluster's slot table as it goes. At a fault, each match
is put in a class by the primaries that held, just before it, the slot of its keys and the slot of its bot
job stream (``bots:jobs:{<shard>}``, see ``services/core/match/bots_seam.py``; usually the same primary):

* ``healthy``: both on primaries that were not killed (these must not stall);
* ``killed_primary``: the match's own keys on the killed primary (these stall until the replica takes over);
* ``stream_on_killed_primary``: the match on a healthy primary, its job stream on the killed one;
* ``all``: every bot match, for a fault that kills no primary.

Per class the rule used for human moves (:data:`STALLED_BELOW`): the seconds after the fault in which the
class's bot matches advanced fewer versions than half their rate in the 10 s before it (counted in bins of a
few seconds when a class makes only a few versions a second, see :func:`binned_stall`); and, per match that
was active at the fault, the longest it went without a new version (in the 10 s after the fault, and in the
10 s before it, for comparison). A match's version advances on bots' and its person's moves alike, so each
sample also says whether a bot seat is to act: the longest a match then waited for a new version is what the
bot workers cost it (``longest_bot_wait_s``), whatever held up its person.

The observer runs in the load test's runner (``meeple loadtest --chaos``) and, for ``make deploy-test``,
inside the compose network (``python -m loadtests.botstall watch``: match ids on stdin, JSON lines out).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import msgspec
import orjson
import redis
from redis.crc import key_slot

from services import redisconn
from services.core.match.bots_seam import stream_on
from services.core.meta import Seat
from services.core.record import control
from services.core.record.store import keys

#: A bin in which fewer versions were made than this share of the usual (the 10 s before) is stalled.
STALLED_BELOW = 0.5
BEFORE_S = 10
#: A bin holds this many versions at the usual rate (one second at least, MAX_BIN_S at most).
MIN_PER_BIN, MAX_BIN_S = 8, 4
#: Seconds after a fault looked at, at most.
HORIZON_S = 60
HEALTHY, KILLED, STREAM_KILLED, ALL = "healthy", "killed_primary", "stream_on_killed_primary", "all"
CLASSES = (HEALTHY, KILLED, STREAM_KILLED, ALL)


@dataclass(frozen=True)
class Sample:
    at: float
    match_id: str
    version: int
    active: bool
    #: a seat a bot plays is to act (the match waits on a bot worker, not on its person)
    bot_to_act: bool = False


#: (first slot, last slot, the primary serving them as "host:port"), sorted.
SlotTable = list[tuple[int, int, str]]


def owner(table: SlotTable, slot: int) -> str | None:
    for first, last, node in table:
        if first <= slot <= last:
            return node
    return None


def classify(match_id: str, table: SlotTable, killed: str | None) -> str:
    """The class of ``match_id`` for a fault that killed primary ``killed`` (None: no primary was killed)."""
    if killed is None:
        return ALL
    holder = owner(table, key_slot(keys(match_id)[0].encode()))
    if holder == killed:
        return KILLED
    spans = [(first, last) for first, last, node in table if node == holder] if holder is not None else None
    if owner(table, key_slot(stream_on(match_id, spans).encode())) == killed:  # (where the core puts its jobs)
        return STREAM_KILLED
    return HEALTHY


def table_at(tables: Sequence[tuple[float, SlotTable]], at: float) -> SlotTable:
    """The newest slot table seen before ``at`` (the first one if none was)."""
    before = [table for t, table in tables if t <= at]
    return before[-1] if before else (tables[0][1] if tables else [])


def advances(samples: Iterable[Sample]) -> dict[str, list[tuple[float, int]]]:
    """Per match, (when, versions made since its sample before) for each sample that saw it advance."""
    last: dict[str, int] = {}
    out: dict[str, list[tuple[float, int]]] = {}
    for s in sorted(samples, key=lambda s: s.at):
        before = last.get(s.match_id)
        last[s.match_id] = s.version
        if before is not None and s.version > before:
            out.setdefault(s.match_id, []).append((s.at, s.version - before))
    return out


def _span(samples: list[Sample]) -> tuple[float, float]:
    """From the first sample of a match to the sample that first saw it finished (or its last sample)."""
    ordered = sorted(samples, key=lambda s: s.at)
    ended = next((s.at for s in ordered if not s.active), ordered[-1].at)
    return ordered[0].at, ended


def _longest_idle(changes: list[float], start: float, end: float) -> float:
    points = [start, *(c for c in changes if start < c < end), end]
    return max((b - a for a, b in itertools.pairwise(points)), default=0.0)


def bot_waits(samples: Iterable[Sample]) -> list[tuple[float, float, bool]]:
    """(from, to, answered) of each time one match sat at one version with a bot to act: from the first sample
    that saw it so to the first that saw a newer version (answered: a bot moved), or to its last sample."""
    waits: list[tuple[float, float, bool]] = []
    since, version, last = None, None, None
    for s in sorted(samples, key=lambda s: s.at):
        if since is not None and s.version != version:
            waits.append((since, s.at, True))
            since = None
        if since is None and s.bot_to_act and s.active:
            since, version = s.at, s.version
        last = s.at
    if since is not None and last is not None and last > since:
        waits.append((since, last, False))
    return waits


def _longest_wait(waits: list[tuple[float, float, bool]], start: float, end: float) -> float:
    return max((min(b, end) - max(a, start) for a, b, _ in waits if a < end and b > start), default=0.0)


def binned_stall(per_second: Mapping[int, int], at: float, end: float) -> dict[str, Any]:
    """The stall rule on a series of counts per second: its rate in the 10 s before ``at`` (the mean), and the
    bins after it (up to ``end``) in which it fell under :data:`STALLED_BELOW` of that. A bin is one second
    when the rate is at least :data:`MIN_PER_BIN` a second, else as many seconds as make that many (at most
    :data:`MAX_BIN_S`): a class of a few matches makes a few versions a second, and one-second counts that
    small would read noise as stalls."""
    rate = sum(per_second.get(s, 0) for s in range(int(at) - BEFORE_S, int(at))) / BEFORE_S
    if not rate:
        return {"per_s_before": 0.0, "stalled_s": None}  # nothing moved before: no usual rate to fall under
    bin_s = 1 if rate >= MIN_PER_BIN else min(MAX_BIN_S, math.ceil(MIN_PER_BIN / rate))
    slow = []
    for first in range(int(at), int(end) - bin_s + 1, bin_s):
        if sum(per_second.get(s, 0) for s in range(first, first + bin_s)) < STALLED_BELOW * rate * bin_s:
            slow.append(first)
    out: dict[str, Any] = {"per_s_before": round(rate, 1), "bin_s": bin_s, "stalled_s": len(slow) * bin_s}
    if slow:
        out.update(stall_from_s=round(slow[0] - at, 1), stall_to_s=round(slow[-1] + bin_s - at, 1))
    return out


def stall_by_class(samples: Sequence[Sample], classes: Mapping[str, str], at: float, until: float
                   ) -> dict[str, dict[str, Any]]:
    """Per class: how many of its bot matches were active at the fault (``matches``); the versions they made
    (``versions_per_s_before``, ``stalled_s``, ``stall_from_s``/``stall_to_s`` after the fault, ``bin_s``: see
    :func:`binned_stall`); and, over the matches active at the fault, the longest one went without a new
    version (``longest_idle_s``) and the longest one waited on a bot (``longest_bot_wait_s``) in the 10 s after
    the fault, and the same in the 10 s before it (``..._before_s``) for comparison. (Bot moves are not counted
    apart: sampled every 0.5 s, a quick bot's move and its person's answer often fall between two samples.)"""
    by_match: dict[str, list[Sample]] = {}
    for s in samples:
        by_match.setdefault(s.match_id, []).append(s)
    moved = advances(samples)
    end = min(until, at + HORIZON_S)
    window = min(end, at + BEFORE_S)  # the longest waits: as long a window after the fault as before it
    out: dict[str, dict[str, Any]] = {}
    for cls in sorted({classes[m] for m in by_match if m in classes}):
        members = [m for m in by_match if classes.get(m) == cls]
        versions: Counter[int] = Counter()
        waits = {m: bot_waits(by_match[m]) for m in members}
        for m in members:
            for t, n in moved.get(m, []):
                versions[int(t)] += n
        live = []
        for m in members:
            first, ended = _span(by_match[m])
            if first <= at < ended:
                live.append((m, first, ended))
        v = binned_stall(versions, at, end)
        figures: dict[str, Any] = {"matches": len(live), "matches_seen": len(members),
                                   "versions_per_s_before": v.pop("per_s_before"), **v}
        if live:
            changes = {m: [t for t, _ in moved.get(m, [])] for m, _, _ in live}
            idle = [_longest_idle(changes[m], at, min(window, ended)) for m, _, ended in live]
            idle_before = [_longest_idle(changes[m], max(at - BEFORE_S, first), at) for m, first, _ in live]
            figures.update(longest_idle_s=round(max(idle), 1), median_longest_idle_s=round(statistics.median(idle), 1),
                           longest_idle_before_s=round(max(idle_before), 1),
                           longest_bot_wait_s=round(max(_longest_wait(waits[m], at, window) for m, _, _ in live), 1),
                           longest_bot_wait_before_s=round(max(_longest_wait(waits[m], at - BEFORE_S, at)
                                                               for m, _, _ in live), 1))
        out[cls] = figures
    return out


def fault_figures(samples: Sequence[Sample], tables: Sequence[tuple[float, SlotTable]], at: float, until: float,
                  killed: str | None) -> dict[str, dict[str, Any]]:
    """Classify every sampled match by the slot table in force just before the fault, then :func:`stall_by_class`."""
    table = table_at(tables, at)
    classes = {s.match_id: classify(s.match_id, table, killed) for s in samples}
    return stall_by_class(samples, classes, at, until)


def node_named(table: SlotTable, wanted: Callable[[str], bool]) -> str | None:
    """The name in ``table`` of the primary ``wanted`` picks (by port, by host name)."""
    return next((node for _, _, node in table if wanted(node)), None)


# -- the observer ---------------------------------------------------------------------------------------------

def slot_table(client: Any) -> SlotTable:
    """The client's view of which primary serves which slots (one server: every slot, named "single")."""
    if not redisconn.is_cluster(client):
        return [(0, 16383, "single")]
    cache = client.nodes_manager.slots_cache
    ranges: SlotTable = []
    for slot in sorted(cache):
        nodes = cache[slot]
        if not nodes:
            continue
        name = nodes[0].name
        if ranges and ranges[-1][2] == name and ranges[-1][1] == slot - 1:
            ranges[-1] = (ranges[-1][0], slot, name)
        else:
            ranges.append((slot, slot, name))
    return ranges


@dataclass
class Observer:
    """Reads every watched match's version and status every ``every_s``, each node in a thread of its own: a
    node that is down (its primary failing over) may take seconds to fail (a dead container's address, a slow
    name lookup): its read is left running, the node is skipped meanwhile, and the other nodes are read on
    time. The slot table is read again every 2 s (and soon after a failure), off the sampling path too."""

    client: Any
    every_s: float = 0.5
    discover: Callable[[], Iterable[str]] | None = None
    on_sample: Callable[[Sample], None] | None = None
    on_table: Callable[[float, SlotTable], None] | None = None
    samples: list[Sample] = field(default_factory=list)
    tables: list[tuple[float, SlotTable]] = field(default_factory=list)
    watched: dict[str, bool] = field(default_factory=dict)  # match id -> still active
    rounds: int = 0
    _resting: dict[str, float] = field(default_factory=dict)
    _busy: dict[str, Future[int]] = field(default_factory=dict)  # node (or "table") -> its read, if still running
    _table_at: float = 0.0
    _pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(8, "bot-match-observer"))
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None

    def watch(self, match_id: str) -> None:
        with self._lock:
            self.watched.setdefault(match_id, True)

    def _note_table(self) -> None:
        table = slot_table(self.client)
        now = time.time()
        with self._lock:
            if not table or (self.tables and self.tables[-1][1] == table):
                return
            self.tables.append((now, table))
        if self.on_table is not None:
            self.on_table(now, table)

    def _refresh_table(self) -> int:
        redisconn.refresh(self.client)
        self._note_table()
        return 0

    def _refresh(self, every_s: float = 2.0) -> None:
        now = time.monotonic()
        if now - self._table_at >= every_s and self._idle("table"):
            self._table_at = now
            self._busy["table"] = self._pool.submit(self._refresh_table)

    def _idle(self, name: str) -> bool:
        running = self._busy.get(name)
        return running is None or running.done()

    def sample_once(self, wait_s: float | None = None) -> int:
        """One round over the watched active matches: a read per node not resting and not still busy with the
        last one, waited on ``wait_s`` at most (default: most of ``every_s``); how many matches were read."""
        if self.discover is not None:
            for match_id in self.discover():
                self.watch(match_id)
        self._refresh()
        groups: dict[str, list[str]] = {}
        with self._lock:
            watched = list(self.watched.items())
        for match_id, active in watched:
            if active:
                groups.setdefault(self._node_of(match_id), []).append(match_id)
        now = time.monotonic()
        reads = []
        for node, ids in groups.items():
            if self._resting.get(node, 0.0) <= now and self._idle(node):
                self._busy[node] = self._pool.submit(self._read_node, node, ids)
                reads.append(self._busy[node])
        done, _ = wait(reads, timeout=self.every_s * 0.8 if wait_s is None else wait_s)
        self.rounds += 1
        return sum(f.result() for f in done)

    def _read_node(self, node: str, ids: list[str]) -> int:
        try:
            replies = self._read(node, ids)
        except (*redisconn.UNAVAILABLE, redis.ResponseError):
            self._resting[node] = time.monotonic() + 1.0
            self._refresh(every_s=0.5)
            return 0
        at = time.time()
        read = 0
        for match_id, (version, meta) in zip(ids, replies, strict=True):
            if version is None or meta is None:  # not there (yet, or any more): look again later
                continue
            doc = orjson.loads(meta)  # (read as it is, however little it holds: an observer never refuses a record)
            active = doc.get("status") in ("active", "waiting")
            seats = doc.get("seats") or []
            bot = active and any(0 <= seat < len(seats) and control.bot_plays(msgspec.convert(seats[seat], Seat))
                                 for seat in doc.get("to_act") or [])
            sample = Sample(at, match_id, int(version), active, bot)
            with self._lock:
                self.samples.append(sample)
                self.watched[match_id] = sample.active
            if self.on_sample is not None:
                self.on_sample(sample)
            read += 1
        return read

    def _node_of(self, match_id: str) -> str:
        if not redisconn.is_cluster(self.client):
            return "single"
        try:
            return str(self.client.get_node_from_key(keys(match_id)[0]).name)
        except Exception:  # a slot with no primary known right now
            return "?"

    def _read(self, node: str, ids: list[str]) -> list[tuple[Any, Any]]:
        if node == "?":
            raise redis.ConnectionError("no primary known for these slots")
        target = (self.client if node == "single"
                  else self.client.get_redis_connection(self.client.get_node(node_name=node)))
        pipe = target.pipeline(transaction=False)
        for match_id in ids:
            version_key, meta_key = keys(match_id)[:2]
            pipe.get(version_key)
            pipe.get(meta_key)
        flat = pipe.execute()
        return list(zip(flat[::2], flat[1::2], strict=True))

    def run(self) -> None:
        self._note_table()
        while not self._stop.is_set():
            began = time.monotonic()
            with contextlib.suppress(Exception):  # the observer must outlive any fault it watches
                self.sample_once()
            self._stop.wait(max(0.0, self.every_s - (time.monotonic() - began)))

    def start(self) -> Observer:
        self._thread = threading.Thread(target=self.run, name="bot-match-observer", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        self._pool.shutdown(wait=False, cancel_futures=True)  # (a read stuck on a dead node is not waited for)


def connect(url: str) -> Any:
    """A client that fails at once on a node that is down (the observer reads the others meanwhile)."""
    return redisconn.connect(url, patient=False, socket_timeout=1.0, socket_connect_timeout=1.0)


# -- as a process: ids on stdin, JSON lines out (make deploy-test runs it inside the compose network) ----------

def encode_sample(s: Sample) -> bytes:
    return orjson.dumps({"t": s.at, "id": s.match_id, "v": s.version, "a": s.active, "b": s.bot_to_act})


def encode_table(at: float, table: SlotTable) -> bytes:
    return orjson.dumps({"t": at, "slots": table})


def decode(line: bytes) -> tuple[str, Any]:
    """("sample", Sample) or ("table", (t, SlotTable)) from a line of ``watch``'s output."""
    doc = orjson.loads(line)
    if "slots" in doc:
        return "table", (float(doc["t"]), [(int(a), int(b), str(n)) for a, b, n in doc["slots"]])
    return "sample", Sample(float(doc["t"]), str(doc["id"]), int(doc["v"]), bool(doc["a"]), bool(doc.get("b")))


def watch_main(url: str) -> int:
    """Watch the match ids given on stdin (one a line) until stdin closes; samples and tables on stdout."""
    lock = threading.Lock()

    def emit(line: bytes) -> None:
        with lock:
            sys.stdout.buffer.write(line + b"\n")
            sys.stdout.buffer.flush()

    observer = Observer(connect(url), on_sample=lambda s: emit(encode_sample(s)),
                        on_table=lambda t, table: emit(encode_table(t, table))).start()
    for raw in sys.stdin:
        if raw.strip():
            observer.watch(raw.strip())
    observer.stop()
    return 0


if __name__ == "__main__":
    import os

    if sys.argv[1:2] != ["watch"]:
        print("usage: python -m loadtests.botstall watch  (REDIS_URL; match ids on stdin)", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(watch_main(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")))
