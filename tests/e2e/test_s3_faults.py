"""The table and the stream's state on an object store that fails: throttling, 5xx, dropped connections, stalls,
short bodies, conditional PUTs applied but answered with an error, outages.

Everything goes through :class:`s3_fault_proxy.FaultProxy` in front of moto (the writer writes to moto directly:
the writer is not what is tested). Streams are driven in-process the way Spark drives the source
(:class:`sim_query.SimQuery`: Spark's offset and commit logs kept here, a failure ends the query and the next
``run`` is a restart), so a run of many faults costs seconds, not minutes.

Retry delays are shortened for these tests (:func:`fast_backoff`: botocore's backoff ×1/50, this package's first
backoff 10 ms; ``HUDI_FAULT_REAL_BACKOFF=1`` keeps them): the retry *decisions* are the product's, only the
sleeping is shorter. ``HUDI_FAULT_COMMITS=N`` runs each fault kind and rate for N commits. Per fault kind and rate
the requests, faults, retries and changes expected/delivered/duplicated/lost are printed at the end of the
module (``pytest -s``) and written as JSON where ``HUDI_FAULT_REPORT`` names a file.
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError, ResponseStreamingError
from support.s3_fault_proxy import Fault, FaultProxy
from support.s3_server import BUCKET, KEY, REGION, SECRET, S3Server
from support.sim_query import SimQuery
from support.verify import change_feed, feed_differences

from hudi_streaming.errors import CorruptFileError, StateError, StoreError
from hudi_streaming.hoodie import retry
from hudi_streaming.hoodie.retry import retry_counts
from hudi_streaming.hoodie.storage import Storage, storage_retries
from hudi_streaming.state import StateStore, StreamState
from hudi_streaming.writer.loadgen import LoadGenerator

#: the fault kinds of the stream matrix and the operations each is aimed at (empty: every request)
KINDS = {"503": (), "500": (), "reset_before": (), "reset_after": (), "stall": (), "truncate": ("GET",),
         "applied_500": ("CPUT", "DELETE"), "applied_reset": ("CPUT", "DELETE")}
RATES = (0.01, 0.05, 0.20)
#: writer commits per fault kind and rate (one in CI; ``HUDI_FAULT_COMMITS=20`` for minutes of faults)
COMMITS = int(os.environ.get("HUDI_FAULT_COMMITS", "1"))
#: the stream's read timeout in these tests (a stall is then a timeout; its retries absorb a slow answer); the
#: unretried proxy client's, which a loaded machine's answer must not reach (0.3 s did, under the suite's two
#: workers); a stalled request hangs longer than either, by far
READ_TIMEOUT, CLIENT_TIMEOUT, STALL = 0.3, 2.0, 6.0
REPORT: list[dict] = []


@pytest.fixture(scope="module")
def proxy(s3):
    p = FaultProxy(s3, seed=21, stall_seconds=STALL)
    yield p
    p.stop()


@pytest.fixture(autouse=True)
def no_faults(proxy):
    proxy.clear()
    proxy.reset_stats()
    yield
    proxy.clear()


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    """botocore's standard-mode backoff ×1/50 and this package's first backoff 10 ms (see the module doc); not
    with ``HUDI_FAULT_REAL_BACKOFF=1``."""
    if os.environ.get("HUDI_FAULT_REAL_BACKOFF") == "1":
        return
    from botocore.retries.standard import ExponentialBackoff

    delay = ExponentialBackoff.delay_amount
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: delay(self, context) / 50)
    monkeypatch.setattr(retry, "BACKOFF_BASE", 0.01)


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    if not REPORT:
        return
    print("\n\nfault kind     rate  requests  faults  retries(client+storage)  own writes  restarts  "
          "expected  delivered  duplicated  lost  seconds")
    for r in REPORT:
        print(f"{r['kind']:<13} {r['rate']:>5.0%}  {r['requests']:>8}  {r['faults']:>6}  "
              f"{r['client_retries']:>7} + {r['storage_retries']:<13}  {r['own_writes']:>10}  {r['restarts']:>8}  "
              f"{r['expected']:>8}  {r['delivered']:>9}  {r['duplicated']:>10}  {r['lost']:>4}  {r['seconds']:>7.1f}")
    if os.environ.get("HUDI_FAULT_REPORT"):
        Path(os.environ["HUDI_FAULT_REPORT"]).write_text(json.dumps(REPORT, indent=1))


def spark_options(proxy: FaultProxy, **extra: str) -> dict[str, str]:
    """The proxy as a Spark user gives an S3 endpoint, with a short read timeout (stalls are then timeouts)."""
    return {**proxy.spark_options,
            "fs.config_kwargs": json.dumps({"read_timeout": READ_TIMEOUT, "connect_timeout": READ_TIMEOUT}),
            **extra}


def writer(s3: S3Server, name: str, seed: int = 3) -> LoadGenerator:
    return LoadGenerator(s3.url(name), keys=80, partitions=2, seed=seed, batch=12, name="faults", late_share=0.0,
                         storage_options=s3.storage_options)


def commit(gen: LoadGenerator, steps: list) -> None:
    """One writer step; every third a compaction too (base files rewritten: base and log reads)."""
    steps.append(gen.step())
    if len(steps) % 3 == 0:
        assert gen.writer is not None
        gen.writer.compact()


# -- the proxy itself -------------------------------------------------------------------------------------------
@pytest.fixture
def client(proxy):
    """boto3 through the proxy, one attempt per call: what each fault does, unretried."""
    return boto3.client("s3", endpoint_url=proxy.endpoint, region_name=REGION, aws_access_key_id=KEY,
                        aws_secret_access_key=SECRET,
                        config=Config(retries={"total_max_attempts": 1}, read_timeout=CLIENT_TIMEOUT,
                                      connect_timeout=CLIENT_TIMEOUT))


def test_the_proxy_forwards_and_counts_every_operation(proxy, client):
    body = bytes(range(256)) * 40
    proxy.reset_stats()
    client.put_object(Bucket=BUCKET, Key="proxy/a", Body=body)
    client.put_object(Bucket=BUCKET, Key="proxy/b", Body=b"b", IfNoneMatch="*")
    assert client.get_object(Bucket=BUCKET, Key="proxy/a")["Body"].read() == body
    assert client.head_object(Bucket=BUCKET, Key="proxy/a")["ContentLength"] == len(body)
    assert [o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix="proxy/")["Contents"]] == ["proxy/a",
                                                                                                      "proxy/b"]
    client.delete_object(Bucket=BUCKET, Key="proxy/b")
    assert proxy.stats() == {"requests": 6, "by_op": {"PUT": 1, "CPUT": 1, "GET": 1, "HEAD": 1, "LIST": 1,
                                                       "DELETE": 1}, "faults": {}, "injected": 0}


@pytest.mark.parametrize("kind,code", [("503", "SlowDown"), ("500", "InternalError"), ("403", "AccessDenied")])
def test_the_proxy_answers_s3_errors(proxy, client, kind, code):
    client.put_object(Bucket=BUCKET, Key="proxy/e", Body=b"x")
    proxy.set_faults(Fault(kind, ops={"GET"}, prefix="proxy/"))
    with pytest.raises(ClientError) as e:
        client.get_object(Bucket=BUCKET, Key="proxy/e")
    assert e.value.response["Error"]["Code"] == code
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == int(kind)
    client.head_object(Bucket=BUCKET, Key="proxy/e")  # another operation passes
    assert proxy.stats()["faults"] == {kind: 1}


def test_the_proxy_resets_before_and_after_the_headers(proxy, client):
    client.put_object(Bucket=BUCKET, Key="proxy/r", Body=b"y" * 5000)
    proxy.set_faults(Fault("reset_before", ops={"GET"}))
    with pytest.raises(ConnectionClosedError):
        client.get_object(Bucket=BUCKET, Key="proxy/r")
    proxy.set_faults(Fault("reset_after", ops={"GET"}))
    response = client.get_object(Bucket=BUCKET, Key="proxy/r")  # status and headers arrive
    assert response["ContentLength"] == 5000
    with pytest.raises(ResponseStreamingError):
        response["Body"].read()
    assert proxy.stats()["faults"] == {"reset_before": 1, "reset_after": 1}


def test_the_proxy_stalls_past_the_read_timeout(proxy, client):
    client.put_object(Bucket=BUCKET, Key="proxy/s", Body=b"z")
    proxy.set_faults(Fault("stall", ops={"HEAD"}))
    began = time.monotonic()
    with pytest.raises(ReadTimeoutError):
        client.head_object(Bucket=BUCKET, Key="proxy/s")
    assert CLIENT_TIMEOUT <= time.monotonic() - began < STALL


def test_the_proxy_truncates_a_body_whose_length_says_more(proxy, client):
    body = b"0123456789" * 1000
    client.put_object(Bucket=BUCKET, Key="proxy/t", Body=body)
    proxy.set_faults(Fault("truncate", ops={"GET"}, limit=1))
    response = client.get_object(Bucket=BUCKET, Key="proxy/t")
    assert response["ContentLength"] == len(body)
    with pytest.raises(ResponseStreamingError):
        response["Body"].read()
    assert client.get_object(Bucket=BUCKET, Key="proxy/t")["Body"].read() == body  # the limit: once


@pytest.mark.parametrize("kind", ["applied_500", "applied_reset"])
def test_the_proxy_applies_a_conditional_put_and_then_fails_it(proxy, client, kind):
    key = f"proxy/c-{kind}"
    proxy.set_faults(Fault(kind, ops={"CPUT"}))
    with pytest.raises((ClientError, ConnectionClosedError)):
        client.put_object(Bucket=BUCKET, Key=key, Body=b"mine", IfNoneMatch="*")
    proxy.clear()
    assert client.get_object(Bucket=BUCKET, Key=key)["Body"].read() == b"mine"  # it exists all the same
    with pytest.raises(ClientError) as e:
        client.put_object(Bucket=BUCKET, Key=key, Body=b"mine", IfNoneMatch="*")
    assert e.value.response["Error"]["Code"] == "PreconditionFailed"


def test_the_proxy_picks_faults_by_share_and_seed(s3):
    """The same seed injects into the same requests; a share of 20 % injects about a fifth."""
    picks = []
    for _ in range(2):
        p = FaultProxy(s3, seed=5)
        try:
            p.set_faults(Fault("500", rate=0.2))
            picks.append([p._pick("GET", "k", True) for _ in range(1000)])
        finally:
            p.stop()
    assert picks[0] == picks[1]
    assert 150 < sum(k is not None for k in picks[0]) < 250


# -- a stream through every fault kind at 1, 5 and 20 % ---------------------------------------------------------
@pytest.mark.parametrize("rate", RATES)
def test_a_stream_through_faults_delivers_every_change_once(s3, proxy, rate):
    """The writer commits (and compacts) while a stream with table and state behind the proxy follows it; each
    fault kind in turn hits ``rate`` of the requests (of the operations in :data:`KINDS`) for :data:`COMMITS`
    commits. Every change arrives exactly once, the
    stream never stops (transient faults are retried), the state stays whole."""
    name = f"matrix-{int(rate * 100)}"
    gen, steps = writer(s3, f"{name}/table", seed=int(rate * 100)), []
    commit(gen, steps)
    query = SimQuery(s3.url(f"{name}/table"), s3.url(f"{name}/state"),
                     spark_options(proxy, readMode="changelog", emitDeletes="true", startingInstant=steps[0].instant))
    query.run()
    for kind, ops in KINDS.items():
        proxy.reset_stats()
        before, began, first = retry_counts(), time.monotonic(), len(steps)
        proxy.set_faults(Fault(kind, rate=rate, ops=frozenset(ops)))
        for _ in range(COMMITS):
            commit(gen, steps)
            query.run_until_caught_up()
        proxy.clear()
        stats, after = proxy.stats(), retry_counts()
        instants = {s.instant for s in steps[first:]}
        expected = [c for c in change_feed(steps) if c[2] in instants]
        got = [r for r in query.rows if r["_hoodie_commit_time"] in instants]
        diff = feed_differences(expected, got)
        REPORT.append({"kind": kind, "rate": rate, "requests": stats["requests"], "faults": stats["injected"],
                       "client_retries": after["clientRetries"] - before["clientRetries"],
                       "storage_retries": after["storageRetries"] - before["storageRetries"],
                       "own_writes": after["ownWrites"] - before["ownWrites"], "restarts": query.restarts,
                       "expected": len(expected), "delivered": len(got), "duplicated": len(diff["duplicated"]),
                       "lost": len(diff["lost"]), "seconds": round(time.monotonic() - began, 1)})
    whole = feed_differences(change_feed(steps), query.rows)
    assert whole == {"duplicated": [], "lost": [], "unexpected": []}
    assert query.restarts == 0, "a transient fault stopped the stream"
    assert StateStore(s3.url(f"{name}/state"), s3.storage_options).newest() is not None  # whole, checksums hold


# -- conditional PUTs whose answer is lost ----------------------------------------------------------------------
def _state(n: int) -> StreamState:
    return StreamState(table_url="s3://t", table_name="t", stream_id="s" * 32, next_round=n, started=True)


@pytest.mark.parametrize("kind", ["applied_500", "applied_reset"])
@pytest.mark.parametrize("botocore_retries", [True, False], ids=["botocore-retries", "own-loop"])
def test_a_state_write_applied_but_answered_with_an_error_is_the_streams_own(s3, proxy, kind, botocore_retries):
    """The store applies the conditional PUT of a state file and answers 500 (or resets): the retry — botocore's,
    or this package's loop when botocore's retries are off — finds the file holding exactly the bytes written,
    which is this write, not a second writer's."""
    options = dict(proxy.storage_options)
    if not botocore_retries:
        options["config_kwargs"] = {"retries": {"total_max_attempts": 1}}
    location = s3.url(f"ambiguous/{kind}-{botocore_retries}")
    store = StateStore(location, options)
    store.save(_state(1))
    own = retry_counts()["ownWrites"]
    proxy.set_faults(Fault(kind, ops={"CPUT"}, limit=1))
    store.save(_state(2))
    assert proxy.stats()["faults"] == {kind: 1}
    assert retry_counts()["ownWrites"] == own + 1
    proxy.clear()
    again = StateStore(location, s3.storage_options)
    assert again.newest() == _state(2) and again.version == store.version == 1


def test_a_second_writer_of_the_state_is_still_refused(s3, proxy):
    """Two queries on one state location, the second's conditional PUT answered with a 500 after the store
    refused it (412 is not applied: the first query's file stays): other bytes are another writer's."""
    location = s3.url("ambiguous/second-writer")
    first, second = StateStore(location, proxy.storage_options), StateStore(location, proxy.storage_options)
    first.save(_state(1))
    proxy.set_faults(Fault("applied_500", ops={"CPUT"}, limit=1))
    with pytest.raises(StateError, match="written by another query .* two live queries share this stateLocation"):
        second.save(StreamState(table_url="s3://t", table_name="t", stream_id="o" * 32, started=True))
    assert StateStore(location, s3.storage_options).newest() == _state(1)


def test_an_exclusive_create_of_other_bytes_is_file_exists(s3, proxy):
    storage = Storage(s3.url("ambiguous/create"), proxy.storage_options)
    storage.create("f", b"one")
    storage.create("f", b"one")  # the same bytes: this write (the answer of an applied attempt was lost)
    with pytest.raises(FileExistsError):
        storage.create("f", b"two")


# -- a persistent outage ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["503", "reset_before", "stall"])
def test_a_persistent_outage_stops_the_query_in_bounded_time_with_one_line(s3, proxy, kind):
    """Every request fails for longer than ``retry_deadline_seconds``: the query stops with one line naming the
    store, the operation, the file and the last error; once the store is back a restart delivers what was
    committed meanwhile, exactly once."""
    name, deadline = f"outage-{kind}", 4.0
    gen, steps = writer(s3, f"{name}/table"), []
    commit(gen, steps)
    query = SimQuery(s3.url(f"{name}/table"), s3.url(f"{name}/state"),
                     spark_options(proxy, readMode="changelog", emitDeletes="true", startingInstant=steps[0].instant,
                                   **{"fs.retry_deadline_seconds": str(deadline)}))
    query.run()
    commit(gen, steps)
    proxy.reset_stats()
    proxy.set_faults(Fault(kind))
    before, began = retry_counts(), time.monotonic()
    with pytest.raises(StoreError) as e:
        query.run()
    took = time.monotonic() - began
    message = str(e.value)
    stats, after = proxy.stats(), retry_counts()
    REPORT.append({"kind": f"outage {kind}", "rate": 1.0, "requests": stats["requests"], "faults": stats["injected"],
                   "client_retries": after["clientRetries"] - before["clientRetries"],
                   "storage_retries": after["storageRetries"] - before["storageRetries"], "own_writes": 0,
                   "restarts": 1, "expected": 0,
                   "delivered": 0, "duplicated": 0, "lost": 0, "seconds": round(took, 1), "error": message})
    print(f"\noutage {kind}: stopped after {took:.1f} s: StoreError: {message}")
    assert "\n" not in message
    assert message.startswith(f"s3://{BUCKET}/{name}/")  # the file (table or state) it was at
    assert f"(object store {proxy.endpoint})" in message
    assert f"given up (retry_deadline_seconds={deadline:g}); last error: " in message
    last = {"503": r"SlowDown \(HTTP 503\)", "reset_before": r"(EndpointConnection|ConnectionClosed)Error",
            "stall": "ReadTimeoutError"}[kind]
    assert re.search(f"last error: {last}: ", message)
    # bounded: the deadline plus one attempt (botocore's 5 attempts of at most the read timeout, its backoffs)
    assert deadline <= took < deadline + 5 * READ_TIMEOUT + 3
    proxy.clear()
    commit(gen, steps)
    query.run()
    assert feed_differences(change_feed(steps), query.rows) == {"duplicated": [], "lost": [], "unexpected": []}


def test_access_denied_is_not_retried_and_a_restart_resumes(s3, proxy):
    """A 403 is no transient fault: the query stops at once, one line; after it, a restart loses nothing."""
    name = "denied"
    gen, steps = writer(s3, f"{name}/table"), []
    commit(gen, steps)
    query = SimQuery(s3.url(f"{name}/table"), s3.url(f"{name}/state"),
                     spark_options(proxy, readMode="changelog", emitDeletes="true", startingInstant=steps[0].instant))
    query.run()
    commit(gen, steps)
    proxy.set_faults(Fault("403", limit=1))
    began = time.monotonic()
    with pytest.raises(StoreError, match=r"failed: AccessDenied \(HTTP 403\): Access Denied$") as e:
        query.run()
    assert time.monotonic() - began < 5 and "\n" not in str(e.value)
    query.run()
    assert feed_differences(change_feed(steps), query.rows) == {"duplicated": [], "lost": [], "unexpected": []}


# -- truncated and short reads ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sliced(s3):
    """A table on S3 whose latest slice has a base file and a log file: (url, base file, log file)."""
    gen, steps = writer(s3, "short/table"), []
    for _ in range(3):
        commit(gen, steps)  # the third compacts
    commit(gen, steps)
    storage = Storage(s3.url("short/table"), s3.storage_options)
    files = [p for part in storage.list_subdirs("") if part.startswith("part=") for p in
             (i.path for i in storage.list_dir(part))]
    # the newest log file and the base file of its slice (the snapshot reads both)
    log = max((p for p in files if ".log." in p), key=lambda p: p.rsplit("/", 1)[1].split("_")[1])
    file_id = log.rsplit("/", 1)[1].lstrip(".").split("_")[0]
    base = max(p for p in files if p.endswith(".parquet") and file_id in p)  # the newest (compacted) base file
    return s3.url("short/table"), base, log, steps


@pytest.mark.parametrize("which", ["base", "log"])
def test_a_body_cut_short_is_read_again_and_never_a_shorter_split(s3, proxy, sliced, which):
    url, base, log, steps = sliced
    path = base if which == "base" else log
    proxy.set_faults(Fault("truncate", ops={"GET"}, prefix=f"short/table/{path}", limit=2))
    query = SimQuery(url, s3.url(f"short/state-retried-{which}"), spark_options(proxy))
    query.run()
    assert proxy.stats()["faults"] == {"truncate": 2}
    snapshot = {r["key"]: r["ts"] for r in query.rows}
    assert snapshot == {gen_key: ts for gen_key, ts in _model(steps).items()}


@pytest.mark.parametrize("which", ["base", "log"])
def test_a_file_whose_body_always_comes_short_is_an_error_naming_it(s3, proxy, sliced, which):
    url, base, log, _ = sliced
    path = base if which == "base" else log
    proxy.set_faults(Fault("truncate", ops={"GET"}, prefix=f"short/table/{path}"))
    query = SimQuery(url, s3.url(f"short/state-fails-{which}"), spark_options(proxy, **{"fs.retry_deadline_seconds":
                                                                                          "2"}))
    with pytest.raises(StoreError) as e:
        query.run()
    message = str(e.value)
    assert message.startswith(f"{url}/{path} (object store {proxy.endpoint}): read failed")
    assert "\n" not in message and "last error: " in message
    assert query.batches == {}  # nothing delivered from a short read


def test_a_file_shorter_than_its_recorded_size_is_a_corrupt_file(s3):
    storage = Storage(s3.url("short/recorded"), s3.storage_options)
    storage.write_bytes_atomic("x.log.1_0-1-0", b"0123456789")
    assert storage.read_bytes("x.log.1_0-1-0", size=10) == b"0123456789"
    assert storage.read_bytes("x.log.1_0-1-0", size=4) == b"0123"  # a log file appended to since: as recorded
    with pytest.raises(CorruptFileError, match=r"short/recorded/x.log.1_0-1-0: the store holds 10 bytes, fewer than "
                                               r"the 20 bytes"):
        storage.read_bytes("x.log.1_0-1-0", size=20)


def test_a_read_returning_fewer_bytes_than_the_object_holds_is_retried(s3, monkeypatch):
    """A client that hands back a short body without an error (no Content-Length check) is caught too."""
    storage = Storage(s3.url("short/quiet"), {**s3.storage_options, "retry_deadline_seconds": 1})
    storage.write_bytes_atomic("f", b"0123456789")
    calls = []
    cat = storage.fs.cat_file

    def short_twice(path, **kw):
        calls.append(path)
        data = cat(path, **kw)
        return data[:3] if len(calls) <= 2 else data
    monkeypatch.setattr(storage.fs, "cat_file", short_twice)
    retried = retry_counts()["storageRetries"]
    assert storage.read_bytes("f", size=10) == b"0123456789"
    assert retry_counts()["storageRetries"] == retried + 2
    calls.clear()
    monkeypatch.setattr(storage.fs, "cat_file", lambda path, **kw: cat(path, **kw)[:3])
    with pytest.raises(StoreError, match=r"short/quiet/f \(object store .*\): read failed .* last error: ShortRead: "
                                         r"read 3 of 10 bytes"):
        storage.read_bytes("f", size=10)


def _model(steps) -> dict[str, int]:
    present: dict[str, int] = {}
    for key, change, _, ts in change_feed(steps):
        if change == "delete":
            present.pop(key, None)
        elif change != "update_preimage":
            present[key] = ts
    return present


# -- options and counters ---------------------------------------------------------------------------------------
def test_retry_settings_and_counters(s3, proxy):
    storage = Storage(s3.url("settings"), {**proxy.storage_options, "retry_deadline_seconds": "7.5"})
    assert storage.retry_deadline == 7.5
    assert storage.fs.config_kwargs["retries"] == {"mode": "standard", "total_max_attempts": 5}
    assert storage.fs.retries == 1
    mine = Storage(s3.url("settings"), {**proxy.storage_options, "config_kwargs": {"retries": {"mode": "adaptive"}}})
    assert mine.fs.config_kwargs["retries"] == {"mode": "adaptive"}
    assert Storage(s3.url("settings"), proxy.storage_options).retry_deadline == retry.DEFAULT_DEADLINE
    total = storage_retries()
    proxy.set_faults(Fault("503", ops={"PUT"}, limit=1))
    storage.write_bytes_atomic("f", b"x")
    assert storage_retries() == total + 1
    from hudi_streaming.errors import OptionError
    with pytest.raises(OptionError, match="fs.retry_deadline_seconds='soon'"):
        Storage(s3.url("settings"), {**proxy.storage_options, "retry_deadline_seconds": "soon"})

