"""Hudi's schema-on-read history (``.hoodie/.schema``): which columns were renamed since data was written.

With ``hoodie.schema.on.read.enable`` Hudi gives every column an id and keeps each version of the schema
(``ALTER TABLE … RENAME COLUMN`` / ``DROP COLUMN`` make a new one, named by its instant time). A file keeps the
names its writer used, so a column renamed later is found in older files by its id, not by its name: without
this, the rows written before a rename read as null in the renamed column (Hudi's own answer has the values;
tests/oracle/hudi_oracle: cow_v9_rename_drop). Dropped columns need nothing: they are not in the table's schema and
are not read. Top-level columns only: a field renamed inside a struct is not followed.
"""
from __future__ import annotations

import bisect
import json
import posixpath
import re
from dataclasses import dataclass

from ..errors import CorruptFileError
from .storage import Storage

FOLDER = ".hoodie/.schema"
#: a completed history file: ``{requested}_{completed}.schemacommit`` (v8+) or ``{requested}.schemacommit`` (v6)
_COMPLETED = re.compile(r"^(\d+)(?:_\d+)?\.schemacommit$")


@dataclass(frozen=True)
class SchemaHistory:
    version_ids: list[int]  # ascending: the instant time of each version (0 for the first)
    names: list[dict[int, str]]  # per version: top-level column id -> name

    def renames(self, instant: str) -> dict[str, str]:
        """Names in data written at ``instant`` -> the latest names, for the columns renamed since then."""
        i = bisect.bisect_right(self.version_ids, int(instant)) - 1
        if i < 0 or i == len(self.names) - 1:
            return {}
        then, latest = self.names[i], self.names[-1]
        return {name: latest[cid] for cid, name in then.items() if cid in latest and latest[cid] != name}


def load_schema_history(storage: Storage) -> SchemaHistory | None:
    """The newest completed history file (it holds every version), or None for a table without one."""
    done = [(m.group(1), f.path) for f in storage.list_dir(FOLDER)
            if (m := _COMPLETED.match(posixpath.basename(f.path)))]
    if not done:
        return None
    path = max(done)[1]
    try:
        doc = json.loads(storage.read_bytes(path))
        versions = sorted((int(s["version_id"]), {int(f["id"]): str(f["name"]) for f in s["fields"]})
                          for s in doc["schemas"])
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptFileError(f"{storage.full(path)}: not a Hudi schema history ({type(exc).__name__}: {exc})") \
            from None
    if not versions:
        raise CorruptFileError(f"{storage.full(path)}: a Hudi schema history without versions")
    return SchemaHistory([v for v, _ in versions], [n for _, n in versions])
