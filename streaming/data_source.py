"""The data source Spark looks up by name, ``hudi_streaming``: its options, its schema, and the readers it makes.

A module of its own, light at import, because PySpark imports it in Python workers that need nothing else:
the lookup worker of every session that resolves a data source by name (through ``pyspark_hudi_streaming``,
whether or not the session reads Hudi) imports it to learn the name, and the worker that calls ``schema()``
unpickles the class, which imports this module. So only PySpark's data source API is imported here; the
options, the table and the readers (``source``: Arrow, the format layer, the planner) are imported by the
methods that use them.
"""
from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource, DataSourceStreamReader
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

if TYPE_CHECKING:
    from .options import SourceOptions
    from .source import HudiBatchReader


@contextlib.contextmanager
def _importing() -> Iterator[None]:
    """The package's modules load on first use here, in whatever Python Spark runs (``PYSPARK_PYTHON``): one that
    lacks a dependency would otherwise fail with a bare ``ImportError`` deep in a worker's trace. Said in one line
    naming that Python, as the registration module's stand-in says it when even this module cannot load."""
    try:
        yield
    except ImportError as e:
        raise ImportError(f"hudi_streaming cannot be imported by {sys.executable} ({type(e).__name__}: {e}); "
                          "install the package and its dependencies into the Python that Spark runs "
                          "(PYSPARK_PYTHON and PYSPARK_DRIVER_PYTHON)") from e


class HudiStreamingDataSource(DataSource):
    """``spark.readStream.format("hudi_streaming").option(...).load(table_url)``, and ``CREATE TABLE ... USING
    hudi_streaming OPTIONS (path ...)`` for ``spark.table`` / ``spark.readStream.table``."""

    @classmethod
    def name(cls) -> str:
        return "hudi_streaming"

    def _opts(self, schema: StructType | None = None) -> SourceOptions:
        """This read's options over those of the catalog table it reads, if any (kept in its schema)."""
        with _importing():
            from .options import parse_options, table_options, user_options

        defined = table_options(schema.fields[0].metadata) if schema is not None and schema.fields else {}
        given = {k.lower(): v for k, v in user_options(self.options).items()}
        return parse_options({**{k.lower(): v for k, v in defined.items()}, **given})

    def schema(self) -> StructType:
        with _importing():  # the format layer's modules load here, some of them on first use
            from .options import TABLE_OPTIONS_KEY, is_catalog_definition, kept_table_options
            from .schema import source_schema

            schema = from_arrow_schema(source_schema(self._opts()))
        if is_catalog_definition(self.options):  # CREATE TABLE: keep its options where reads will find them
            first = schema.fields[0]
            first.metadata = {**first.metadata, TABLE_OPTIONS_KEY: json.dumps(kept_table_options(self.options))}
        return schema

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        with _importing():
            from ..errors import OptionError
            from .source import HudiStreamReader, _Refusal

        opts = self._opts(schema)
        if not opts.state_location:
            # raised from the reader's first call: an error raised here, PySpark 4's runner buries under its own
            # UnboundLocalError (its cleanup stops a reader that was never made)
            return _Refusal(OptionError(
                "hudi_streaming: option stateLocation is required for streaming reads (a folder the source owns, "
                "e.g. <checkpoint>/hudi_state; Python sources cannot see Spark's checkpoint location)"))
        return HudiStreamReader(opts, schema)

    def reader(self, schema: StructType) -> HudiBatchReader:
        with _importing():
            from .source import batch_reader

        return batch_reader(self._opts(schema), schema)
