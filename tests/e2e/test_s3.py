"""The source on an S3 store (moto's server on loopback): batch reads, a long-running stream, options, secrets.

What object stores do differently from a local disk, each checked for real: fsspec caches listings per
process (a stream must still see new instants), options arrive as Spark strings in Hadoop's names, objects
cannot be renamed (whole-file writes are single PUTs), credentials come from options or the environment, and Spark
prints a streaming relation's options.
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
import s3fs
from support import waits
from support.s3_fault_proxy import FaultProxy
from support.s3_server import KEY, REGION, SECRET, S3Server
from support.verify import apply_upserts, duplicates, state_differences

from hudi_streaming import OptionError, hoodie, read_table
from hudi_streaming.hoodie import storage
from hudi_streaming.hoodie.storage import Storage
from hudi_streaming.streaming.options import parse_options
from hudi_streaming.streaming.storage_options import storage_options
from hudi_streaming.writer import create_table
from hudi_streaming.writer.loadgen import LoadGenerator


@pytest.fixture
def aws_env(monkeypatch, tmp_path):
    """No AWS settings from the machine (variables, ~/.aws, instance metadata), and fresh s3fs instances.

    s3fs resolves credentials once per cached instance, so a test that changes the environment must not get
    an instance made before.
    """
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION",
                 "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    s3fs.S3FileSystem.clear_instance_cache()
    yield monkeypatch
    s3fs.S3FileSystem.clear_instance_cache()


# -- (a) batch reads ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["cow__v6_nonpartitioned", "mor_avro__v6_trips_8i3d",
                                  "mor_parquet__v6_simplekeygen_nonhivestyle", "mor_avro__v8_mor_boundary_windows",
                                  "mor_avro__v9_txns_simple_meta", "cow__v9_txns_nonpart_meta",
                                  "mor_avro__v9_mor_compacted_incremental"])
@pytest.mark.parametrize("fetch", ["whole", "ranged"])
def test_a_table_on_s3_reads_exactly_as_the_same_table_on_disk(name, fetch, s3, unzip_fixture, monkeypatch):
    """Both ways parquet files come from an object store: small objects in one request, larger ones a column
    buffer per request (forced here with a 0-byte threshold and 4 KiB buffers: many requests per column)."""
    if fetch == "ranged":
        monkeypatch.setattr(storage, "WHOLE_FETCH_MAX", 0)
        monkeypatch.setattr(storage, "REMOTE_READ_BUFFER", 4096)
    local = str(unzip_fixture(name).table)
    url = s3.upload(Path(local), f"fixtures/{name}")
    expected = read_table(local)
    assert expected.num_rows > 0
    assert read_table(url, storage_options=s3.storage_options).equals(expected)


@pytest.fixture
def fetched(monkeypatch):
    """The byte ranges s3fs fetches from objects, as (key, start, end), in order."""
    ranges: list[tuple[str, int, int]] = []
    fetch_range = s3fs.core.S3File._fetch_range

    def recorded(self, start, end):
        ranges.append((self.key, start, end))
        return fetch_range(self, start, end)
    monkeypatch.setattr(s3fs.core.S3File, "_fetch_range", recorded)
    return ranges


def _large_base_table(path: Path, rows: int, payload_bytes: int) -> Path:
    """A v9 MOR table of one file group whose base file is about ``rows * payload_bytes`` bytes (random payloads
    do not compress away), with an upsert of every 100th key in a log file; returns the base file."""
    rng = random.Random(5)
    schema = pa.schema([("uuid", pa.string()), ("ts", pa.int64()), ("payload", pa.string())])

    def batch(keys: range, ts: int) -> pa.Table:
        return pa.table({"uuid": [f"k{k:06d}" for k in keys], "ts": [ts] * len(keys),
                         "payload": [rng.randbytes(payload_bytes // 2).hex() for _ in keys]}, schema=schema)
    writer = create_table(str(path), "large_base", schema, record_key="uuid", ordering_field="ts",
                          table_type="MERGE_ON_READ", version=9)
    writer.insert(batch(range(rows), 1))
    writer.upsert(batch(range(0, rows, 100), 2))
    (base,) = (p for p in path.rglob("*.parquet") if ".hoodie" not in p.parts)
    return base


def test_a_large_base_file_on_s3_is_read_a_buffer_at_a_time_and_never_whole(s3, tmp_path, fetched, monkeypatch):
    """A task's memory must not grow with the object: above the whole-fetch size a base file is read in ranged
    requests of at most one buffer, each byte about once, and a footer read (the planner's row count) fetches the
    footer only."""
    monkeypatch.setattr(storage, "WHOLE_FETCH_MAX", 64 << 10)
    monkeypatch.setattr(storage, "REMOTE_READ_BUFFER", 32 << 10)
    base = _large_base_table(tmp_path / "t", 20000, 120)
    url = s3.upload(tmp_path / "t", "large-base")
    size = base.stat().st_size
    assert size > 16 * (64 << 10), "the base file must be well above the whole-fetch size"
    expected = read_table(str(tmp_path / "t"))

    assert read_table(url, storage_options=s3.storage_options).equals(expected)
    reads = [(start, end) for key, start, end in fetched if key.endswith(base.name)]
    assert len(reads) > 8
    # a request is a buffer, or one data page where a page is larger (a page is decoded whole), never the file
    assert max(end - start for start, end in reads) < size / 2
    assert sum(end - start for start, end in reads) < 1.5 * size

    fetched.clear()
    table = hoodie.HudiTable(url, s3.storage_options)
    assert table.storage.parquet_file(base.name).metadata.num_rows == 20000
    footer = sum(end - start for key, start, end in fetched if key.endswith(base.name))
    assert 0 < footer < size / 4


class _KeyCounter(FaultProxy):
    """The counting proxy, counting per (operation, key) too."""

    def __init__(self, server: S3Server):
        super().__init__(server)
        self.by_key: Counter = Counter()

    def _pick(self, op: str, key: str, has_body: bool) -> str | None:
        with self._lock:
            self.by_key[op, key] += 1
        return super()._pick(op, key, has_body)


def test_a_task_reads_each_planned_file_in_one_get_and_a_removed_one_is_data_loss(s3, tmp_path):
    """A split carries each file's size from the listing: a task reads each base and log file in one GET, asking
    the store for no size it knows, nor whether the file is still there (``planned_files``: asked when a read
    fails); a file the cleaner removed since planning is still data loss naming it."""
    from hudi_streaming.errors import DataLossError
    from hudi_streaming.streaming.batch_read import plan_batch_read
    from hudi_streaming.streaming.schema import source_schema
    from hudi_streaming.streaming.source import FileGroupPartition, _read_task

    schema = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("part", pa.string())])
    w = create_table(str(tmp_path / "t"), "one_get", schema, record_key="id", partition_fields="part",
                     ordering_field="ts", table_type="MERGE_ON_READ", version=9)
    w.insert(pa.table({"id": [f"k{i}" for i in range(6)], "ts": [1] * 6, "part": ["a", "b", "c"] * 2}, schema=schema))
    w.upsert(pa.table({"id": ["k0", "k1"], "ts": [2, 2], "part": ["a", "b"]}, schema=schema))
    url = s3.upload(tmp_path / "t", "one-get")
    proxy = _KeyCounter(s3)
    try:
        opts = parse_options({"path": url, **proxy.spark_options})
        output = source_schema(opts)
        tasks = plan_batch_read(opts, output, FileGroupPartition)
        files = [f for t in tasks for r in t.ranges for f in r.split.files]
        assert len(files) == 5, "three base files and two log files"
        proxy.by_key.clear()
        assert sum(b.num_rows for t in tasks for b in _read_task(opts, t, output)) == 6
        prefix = url.split("/", 3)[3] + "/"
        assert {f: {op: n for (op, key), n in proxy.by_key.items() if key == prefix + f} for f in files} == \
            {f: {"GET": 1} for f in files}

        gone = tasks[0].ranges[0].split.files[0]
        s3fs.S3FileSystem(skip_instance_cache=True, **s3.storage_options).rm(f"{url}/{gone}")
        with pytest.raises(DataLossError, match=f"{gone} of file group .* was removed before it was read"):
            list(_read_task(opts, tasks[0], output))
    finally:
        proxy.stop()


def test_a_process_that_read_parquet_in_ranged_requests_exits_cleanly(s3, unzip_fixture):
    """Arrow reading parquet through a Python file object from its own threads aborts or hangs the interpreter
    at exit now and then (apache/arrow#33975, #50482); ranged reads therefore run on the calling thread only.
    Each run here reads every base file of a table that way (threshold 0) and exits the normal way."""
    name = "mor_avro__v9_txns_simple_meta"
    url = s3.upload(unzip_fixture(name).table, f"exit/{name}")
    code = ("import sys, json\n"
            "from hudi_streaming import read_table\n"
            "from hudi_streaming.hoodie import storage\n"
            "storage.WHOLE_FETCH_MAX = 0\n"
            "print(read_table(sys.argv[1], storage_options=json.loads(sys.argv[2])).num_rows)\n")
    for _ in range(3):
        run = subprocess.run([sys.executable, "-c", code, url, json.dumps(s3.storage_options)],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-2000:]
        assert int(run.stdout) > 0

def test_an_incremental_read_on_s3_equals_the_one_on_disk(s3, unzip_fixture):
    name = "mor_avro__v9_txns_simple_meta"
    local = unzip_fixture(name).table
    url = s3.upload(local, f"incremental/{name}")
    writes = [e.completion_time for e in hoodie.HudiTable(str(local)).timeline.completed_writes()]
    expected = read_table(str(local), start=writes[0], end=writes[-2])
    assert 0 < expected.num_rows < read_table(str(local)).num_rows
    assert read_table(url, start=writes[0], end=writes[-2], storage_options=s3.storage_options).equals(expected)


def test_spark_reads_a_table_on_s3_with_hadoop_option_names(spark, s3, unzip_fixture):
    """Spark's Python workers get the credentials and endpoint only through the options, in S3A names."""
    name = "mor_avro__v9_txns_simple_meta"
    local = unzip_fixture(name).table
    url = s3.upload(local, f"spark/{name}")
    got = spark.read.format("hudi_streaming").options(**s3.spark_options).load(url).drop("_change_type").toArrow()
    expected = read_table(str(local))
    key = "_hoodie_record_key"
    assert sorted(got.column(key).to_pylist()) == sorted(expected.column(key).to_pylist())
    assert got.num_rows == expected.num_rows > 0



def test_spark_streams_a_base_file_above_the_whole_fetch_size_from_s3(spark, s3, tmp_path):
    """The ranged reads where users run them: Spark's Python workers read a base file larger than
    ``WHOLE_FETCH_MAX`` (a request per column buffer, on the worker's own thread) and deliver the table."""
    base = _large_base_table(tmp_path / "t", 30000, 1200)
    assert base.stat().st_size > storage.WHOLE_FETCH_MAX
    url = s3.upload(tmp_path / "t", "spark-large-base")
    got: list = []
    query = (spark.readStream.format("hudi_streaming").options(**s3.spark_options)
             .option("stateLocation", str(tmp_path / "state")).load(url).writeStream
             .foreachBatch(lambda df, _: got.extend(df.select("uuid", "ts").collect()))
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination()
    expected = read_table(str(tmp_path / "t"))
    assert sorted((r.uuid, r.ts) for r in got) == sorted(zip(expected.column("uuid").to_pylist(),
                                                             expected.column("ts").to_pylist()))
    assert len(got) == 30000

def test_credentials_and_endpoint_from_the_aws_environment_variables(s3, unzip_fixture, aws_env):
    """No credential options at all, or empty ones (a templated config): botocore's environment applies."""
    local = unzip_fixture("cow__v9_txns_nonpart_meta").table
    url = s3.upload(local, "env/cow__v9_txns_nonpart_meta")
    aws_env.setenv("AWS_ACCESS_KEY_ID", KEY)
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    aws_env.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    aws_env.setenv("AWS_REGION", REGION)
    expected = read_table(str(local))
    assert read_table(url).equals(expected)
    empty = parse_options({"path": url, "fs.s3a.access.key": "", "fs.s3a.secret.key": "", "fs.key": ""}).storage
    assert empty == {}
    assert read_table(url, storage_options=empty).equals(expected)


def test_missing_credentials_are_one_line_naming_the_url_and_what_to_set(s3, aws_env):
    url = s3.url("fixtures/cow__v6_nonpartitioned")
    with pytest.raises(OptionError) as e:
        read_table(url, storage_options={"client_kwargs": {"endpoint_url": s3.endpoint}})
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{url}: no usable credentials for the object store (Unable to locate credentials)")
    assert "fs.key" in msg and "fs.s3a.access.key" in msg and "AWS_ACCESS_KEY_ID" in msg


# -- whole-file writes on a store without rename ----------------------------------------------------------------
def test_an_atomic_write_to_s3_is_one_put_and_nothing_else(s3):
    """No temporary object, no copy, no folder probe: one PUT, which S3 makes visible whole or not at all.

    The writer completes instants this way (the completed instant file appears whole or not at all)."""
    storage = Storage(s3.url("atomic"), s3.storage_options)
    calls: list[str] = []
    original = storage.fs._call_s3

    async def recording(method, *args, **kwargs):
        calls.append(method)
        return await original(method, *args, **kwargs)

    storage.fs._call_s3 = recording
    try:
        storage.write_bytes_atomic(".hoodie/20240101000000000.deltacommit", b'{"x": 1}')
    finally:
        del storage.fs._call_s3
    assert calls == ["put_object"]
    assert storage.read_bytes(".hoodie/20240101000000000.deltacommit") == b'{"x": 1}'


# -- (b) a long-running stream ----------------------------------------------------------------------------------
def test_a_running_stream_on_s3_delivers_new_instants_and_resumes_exactly_once(spark, s3, tmp_path):
    """Table and stream state on S3; the writer commits while one query runs, then while it is stopped.

    The query runs in one Spark session for several commits: its source lives in one long-lived Python
    process, where fsspec's listing cache used to hide every instant committed after the first listing.
    """
    url = s3.url("live/orders")
    gen = LoadGenerator(url, keys=150, partitions=2, seed=5, batch=30, name="s3live", late_share=0.0,
                        storage_options=s3.storage_options)
    steps = [gen.step()]
    batches: dict[int, list[dict]] = {}
    lock = threading.Lock()

    def sink(df, batch_id):
        """Overwrites by batch id, as the README asks of a sink: a query stopped after its sink ran but before
        Spark logged the batch's commit replays that batch, with the same id and the same rows, when it restarts."""
        batch = df.toArrow().to_pylist()
        with lock:
            batches[batch_id] = [dict(r, _batch=batch_id) for r in batch]

    def start():
        return (spark.readStream.format("hudi_streaming").options(**s3.spark_options)
                .option("stateLocation", s3.url("live/state")).option("emitDeletes", "true").load(url)
                .writeStream.foreachBatch(sink).trigger(processingTime="500 milliseconds")
                .option("checkpointLocation", str(tmp_path / "checkpoint")).start())

    def delivered(instant: str) -> int:
        with lock:
            return sum(r["_hoodie_commit_time"] == instant for rows in batches.values() for r in rows)

    def wait_for(query, instant: str) -> None:
        """Until a batch holds ``instant`` (the bound only keeps a broken stream from hanging the run)."""
        def holds() -> bool:
            if query.exception() is not None:
                raise AssertionError(f"the query failed: {query.exception()}")
            return delivered(instant)

        waits.wait_for(holds, f"the running stream to deliver instant {instant}", 180,
                       explain=lambda: f"last progress: {json.dumps(query.lastProgress, default=str)}")

    query = start()
    try:
        wait_for(query, steps[0].instant)
        for _ in range(3):  # commits while the query runs: each is delivered before the next one is written
            steps.append(gen.step())
            wait_for(query, steps[-1].instant)
        last = [p for p in query.recentProgress if p["numInputRows"] > 0][-1]
        assert json.loads(last["sources"][0]["latestOffset"])["lagInstants"] == 0
    finally:
        query.stop()
    for s in steps:  # one instant per planning round while it ran: every row of each write, once
        assert delivered(s.instant) == s.data.num_rows, s.number
    steps += [gen.step(), gen.step()]  # step 5 deletes (delete_every=5)
    assert steps[-2].kind == "delete"
    query = start()
    try:
        wait_for(query, steps[-1].instant)
    finally:
        query.stop()
    rows = [r for _, batch in sorted(batches.items()) for r in batch]
    assert duplicates(rows) == []
    assert {r["_hoodie_commit_time"] for r in rows} == {s.instant for s in steps}
    state = apply_upserts(rows)
    assert {k: r["ts"] for k, r in state.items()} == {gen.key_name(i): ts for i, ts in gen.present.items()}
    assert state_differences(state, read_table(url, storage_options=s3.storage_options)) == []


# -- secrets in what Spark shows --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_table(s3, unzip_fixture) -> str:
    return s3.upload(unzip_fixture("cow__v6_nonpartitioned").table, "secrets/cow__v6_nonpartitioned")


def test_spark_redacts_secret_options_in_plans_and_progress(spark, s3, small_table, tmp_path, capsys):
    """Spark's ``spark.redaction.regex`` (secret, password, token, access key) covers the credential names;
    the plan shows every option, the progress none (the source's metrics hold no options)."""
    token = "SENTINEL-SESSION-TOKEN"  # moto checks no token: a value that appears nowhere else
    options = {**s3.spark_options, "fs.secret": SECRET, "fs.s3a.session.token": token}
    df = (spark.readStream.format("hudi_streaming").options(**options)
          .option("stateLocation", str(tmp_path / "state")).load(small_table))
    df.explain(True)
    plan = capsys.readouterr().out
    for name in ("fs.secret", "fs.s3a.secret.key", "fs.s3a.access.key", "fs.s3a.session.token"):
        assert f"{name}=*********(redacted)" in plan
    query = (df.writeStream.format("noop").trigger(availableNow=True)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    query.awaitTermination(120)
    assert query.exception() is None
    assert sum(p["numInputRows"] for p in query.recentProgress) == 4
    query.explain(True)
    shown = plan + json.dumps(query.recentProgress, default=str) + capsys.readouterr().out
    for secret in (KEY, SECRET, token):
        assert secret not in shown


def test_fs_key_is_redacted_once_the_sql_redaction_regex_names_it(spark, s3, small_table, capsys):
    """s3fs's access key id option ``fs.key`` does not match Spark's default regex; one session setting adds it."""
    options = {**s3.spark_options, "fs.s3a.access.key": "", "fs.key": KEY}
    df = (spark.readStream.format("hudi_streaming").options(**options).option("stateLocation", "/unused")
          .load(small_table))
    default = spark.conf.get("spark.sql.redaction.options.regex")
    df.explain(True)
    assert f"fs.key={KEY}" in capsys.readouterr().out
    try:
        spark.conf.set("spark.sql.redaction.options.regex", r"(?i)url|^fs\.key$")
        df.explain(True)
    finally:
        spark.conf.set("spark.sql.redaction.options.regex", default)
    redacted = capsys.readouterr().out
    assert "fs.key=*********(redacted)" in redacted and KEY not in redacted


# -- (c) option typing and Hadoop names ---------------------------------------------------------------------------
def test_storage_option_values_are_typed_like_fsspec_arguments():
    got = storage_options({"fs.anon": "false", "fs.use_ssl": "TRUE", "fs.max_concurrency": "4",
                           "fs.default_block_size": "5e6", "storage.version_aware": "true",
                           "fs.client_kwargs": '{"region_name": "eu-west-1", "verify": false}',
                           "fs.config_kwargs": '{"retries": {"max_attempts": 3}}', "fs.requester_pays": "False",
                           "fs.key": "12345", "fs.secret": "true", "fs.token": "{tok", "fs.profile": "7",
                           "fs.default_cache_type": "none"})
    assert got == {"anon": False, "use_ssl": True, "max_concurrency": 4, "default_block_size": 5000000.0,
                   "version_aware": True, "client_kwargs": {"region_name": "eu-west-1", "verify": False},
                   "config_kwargs": {"retries": {"max_attempts": 3}}, "requester_pays": False,
                   "key": "12345", "secret": "true", "token": "{tok", "profile": "7", "default_cache_type": "none"}
    assert type(got["anon"]) is bool and type(got["max_concurrency"]) is int


def test_typed_anon_false_makes_s3fs_sign_its_requests():
    """The string 'false' is truthy: s3fs would send unsigned requests."""
    fs = s3fs.S3FileSystem(skip_instance_cache=True, **storage_options({"fs.anon": "false", "fs.key": "k"}))
    assert fs.anon is False


def test_hadoop_s3a_names_map_to_s3fs_arguments():
    got = parse_options({"path": "s3a://b/t", "fs.s3a.endpoint": "http://127.0.0.1:9000",
                         "fs.s3a.access.key": "AK", "fs.s3a.secret.key": "SK", "fs.s3a.session.token": "ST",
                         "fs.s3a.path.style.access": "true", "fs.s3a.endpoint.region": "eu-central-1",
                         "fs.client_kwargs": '{"verify": false}'}).storage
    assert got == {"key": "AK", "secret": "SK", "token": "ST",
                   "client_kwargs": {"verify": False, "endpoint_url": "http://127.0.0.1:9000",
                                     "region_name": "eu-central-1"},
                   "config_kwargs": {"s3": {"addressing_style": "path"}}}
    assert storage_options({"fs.s3a.path.style.access": "false"}) == {
        "config_kwargs": {"s3": {"addressing_style": "virtual"}}}


def test_a_bare_s3a_endpoint_gets_the_scheme_hadoop_would_use():
    assert storage_options({"fs.s3a.endpoint": "minio.local:9000"}) == {
        "client_kwargs": {"endpoint_url": "https://minio.local:9000"}}
    assert storage_options({"fs.s3a.endpoint": "minio.local:9000", "fs.s3a.connection.ssl.enabled": "false"}) == {
        "client_kwargs": {"endpoint_url": "http://minio.local:9000"}, "use_ssl": False}


@pytest.mark.parametrize("option,names", [
    ("fs.s3a.aws.credentials.provider", "fs.key/fs.secret/fs.token, fs.profile, or fs.anon=true"),
    ("fs.s3a.connection.maximum", 'fs.config_kwargs={"max_pool_connections": N}'),
    ("fs.s3a.fast.upload", "pass s3fs's own argument as fs.<argument>"),
])
def test_an_unmapped_s3a_name_is_an_error_naming_the_s3fs_option(option, names):
    with pytest.raises(OptionError) as e:
        parse_options({"path": "s3://b/t", option: "x"})
    assert str(e.value).startswith(f"option {option} is Hadoop's S3A connector's")
    assert names in str(e.value)


def test_one_setting_given_two_ways_is_an_error_that_does_not_show_the_values():
    with pytest.raises(OptionError, match=r"^option fs.s3a.access.key and fs.key set the same thing") as e:
        storage_options({"fs.key": "AK1", "fs.s3a.access.key": "AK2"})
    assert "AK1" not in str(e.value) and "AK2" not in str(e.value)
    with pytest.raises(OptionError, match=r"fs.s3a.endpoint and fs.client_kwargs\['endpoint_url'\]"):
        storage_options({"fs.client_kwargs": '{"endpoint_url": "http://a"}', "fs.s3a.endpoint": "http://b"})
    # the same value twice is no conflict
    assert storage_options({"fs.key": "AK", "fs.s3a.access.key": "AK"}) == {"key": "AK"}


def test_invalid_storage_option_values_name_the_option():
    with pytest.raises(OptionError, match=r"^option fs.client_kwargs: not valid JSON \(Expecting"):
        storage_options({"fs.client_kwargs": "{region_name: eu}"})
    with pytest.raises(OptionError, match=r"^option fs.s3a.path.style.access='yes': must be true or false$"):
        storage_options({"fs.s3a.path.style.access": "yes"})
    with pytest.raises(OptionError, match=r"^option fs.s3a.endpoint.region goes into fs.client_kwargs, which is not"):
        storage_options({"fs.client_kwargs": "[1]", "fs.s3a.endpoint.region": "eu-west-1"})


def test_options_repr_shows_no_credentials():
    opts = parse_options({"path": "s3://b/t", "fs.secret": "SENTINEL-SECRET"})
    assert opts.storage == {"secret": "SENTINEL-SECRET"}
    assert "SENTINEL-SECRET" not in repr(opts) and "SENTINEL-SECRET" not in str(opts)

