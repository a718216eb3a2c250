"""Options are checked when the query is defined (``load()``, Spark's ``schema()`` call), against the table where
they name its columns or partition fields; Hudi's and Delta's names for the same options work; anything else fails
with one line listing what is valid."""
from __future__ import annotations

import pytest

from hudi_streaming.errors import OptionError
from hudi_streaming.streaming.options import instant_of, parse_options
from hudi_streaming.streaming.schema import source_schema

V9 = "mor_avro__v9_txns_simple_meta"


@pytest.mark.parametrize("value, instant", [
    ("20240102030405123", "20240102030405123"),
    ("20240102030405", "20240102030405"),
    ("2024-01-02", "20240102000000000"),
    ("2024-01-02 03:04:05", "20240102030405000"),
    ("2024-01-02T03:04:05.678", "20240102030405678"),
    ("2024-01-02T03:04:05+02:00", "20240102010405000"),  # a named zone is converted to UTC
])
def test_positions_are_instants_or_timestamps(value, instant):
    assert instant_of(value, "startingInstant") == instant


@pytest.mark.parametrize("value", ["notatime", "yesterday", "2024-13-01", "20241399000000", "2024", "1234567890123",
                                   "2024-01-02 25:00"])
def test_a_bad_position_is_an_error_naming_the_option(value):
    with pytest.raises(OptionError, match=f"option endingInstant={value!r}: expected an instant time"):
        parse_options({"path": "/t", "endingInstant": value})


def test_hudi_read_options_map_onto_the_sources_own():
    """Hudi's begin instant is exclusive (``>``): it becomes the next millisecond as this source's inclusive start."""
    o = parse_options({"path": "/t", "hoodie.datasource.read.begin.instanttime": "20240102030405123",
                       "hoodie.datasource.read.end.instanttime": "20240103000000000"})
    assert o.positions("UTC") == ("20240102030405124", "20240103000000000")
    assert parse_options({"path": "/t", "hoodie.datasource.streaming.startOffset": "latest"}).starting_instant == \
        "latest"
    assert parse_options({"path": "/t", "hoodie.datasource.streaming.startOffset": "20240102030405"}) \
        .positions("UTC")[0] == "20240102030405001"


def test_an_unread_hudi_option_is_refused():
    with pytest.raises(OptionError, match="'hoodie.datasource.query.type' is not read by hudi_streaming; the Hudi "
                                          "options it reads: hoodie.datasource.read.begin.instanttime"):
        parse_options({"path": "/t", "hoodie.datasource.query.type": "incremental"})


def test_deltas_names_work():
    o = parse_options({"path": "/t", "maxFilesPerTrigger": "3", "startingTimestamp": "2024-01-02",
                       "ignoreDeletes": "true"})
    assert (o.max_splits_per_trigger, o.positions("UTC")[0], o.ignore_deletes) == (3, "20240102000000000", True)
    # the same moment on a timeline its writer wrote in New York time (Hudi's default LOCAL timeline)
    assert o.positions("America/New_York")[0] == "20240101190000000"
    assert parse_options({"path": "/t", "startingVersion": "latest"}).starting_instant == "latest"


def test_two_names_for_one_option_are_refused():
    with pytest.raises(OptionError, match="options 'startingInstant' and 'startingTimestamp' both set startingInstant"):
        parse_options({"path": "/t", "startingInstant": "earliest", "startingTimestamp": "2024-01-02"})


def test_unknown_columns_and_partition_fields_fail_when_the_query_is_defined(unzip_fixture):
    table = str(unzip_fixture(V9).table)
    with pytest.raises(OptionError, match="option columns: .* has no column nosuch; its columns: txn_id, account_id"):
        source_schema(parse_options({"path": table, "columns": "amount,nosuch"}))
    with pytest.raises(OptionError, match="option partitions: country is not a partition field of .*; its partition "
                                          "fields: region"):
        source_schema(parse_options({"path": table, "partitions": "country=us"}))
    assert source_schema(parse_options({"path": table, "columns": "amount", "partitions": "region=us"})).names == [
        "_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
        "_hoodie_file_name", "amount", "_change_type", "_commit_version", "_commit_timestamp"]
