"""The rows the source delivers for a query's options, checked against the table when the query is defined.

Its own module because Spark asks for it before anything else (``load()``, in ``data_source``), for streams
and batch reads alike, and a stream fixes it as its output schema when it starts.
"""
from __future__ import annotations

import pyarrow as pa

from ..errors import OptionError
from ..hoodie.feed_schema import output_schema
from ..hoodie.table import HudiTable
from .options import SourceOptions


def source_schema(opts: SourceOptions) -> pa.Schema:
    """The rows the source delivers for these options: the table's columns (projected), meta columns, change type.

    Spark asks for it when the query is defined (``load()``), so the options that name the table's columns and
    partition fields are checked against the table here: a wrong name fails there, listing the right ones,
    instead of streaming rows without the columns or no rows at all.
    """
    table = HudiTable(opts.path, opts.storage or None, metadata_enable=opts.metadata_enable)
    schema = table.arrow_schema()
    data = [n for n in schema.names if not n.startswith("_hoodie_")]
    for option, names in (("columns", opts.columns), ("carryoverIgnoreColumns", opts.carryover_ignore_columns)):
        unknown = [c for c in names or [] if c not in schema.names]
        if unknown:
            raise OptionError(f"option {option}: {table.url} has no column {', '.join(unknown)}; its columns: "
                              f"{', '.join(data)}")
    fields = table.config.partition_fields
    unknown = [f for f in opts.partition_filter() or {} if f not in fields]
    if unknown:
        raise OptionError(f"option partitions: {', '.join(unknown)} is not a partition field of {table.url}; its "
                          f"partition fields: {', '.join(fields) or 'none (the table is not partitioned)'}")
    return output_schema(schema, opts.columns)
