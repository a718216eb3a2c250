"""Spark's own checkpoint folder, read for what Spark has committed of this source's stream.

The source's state alone lags Spark by a batch (Spark calls the source's ``commit`` only when it plans the next
batch), so tools that say where a stream stands — ``hudi-streaming state --checkpoint`` — read Spark's log
beside it. Only the files' documented layout is used: ``commits/<batch>`` and ``offsets/<batch>``.
"""
from __future__ import annotations

import json
import posixpath

import fsspec

from ..errors import NotFoundError, OptionError, StateError


def committed_offset(checkpoint: str, stream_id: str, storage: dict) -> tuple[int, dict] | None:
    """Spark's last committed batch and this stream's offset in it, from a Spark checkpoint folder; None when
    Spark has committed no batch yet.

    Spark writes ``commits/<batch>`` once a batch's sink output is done, but calls the source's ``commit``
    only when it plans the next batch, so the state alone lags by a batch: only Spark's log says what it has
    committed. ``offsets/<batch>`` holds a version line, a metadata line, then one offset per source (``-``
    for none); ours is the one naming the state's stream.
    """
    try:
        fs, root = fsspec.core.url_to_fs(checkpoint, **storage)
    except (ValueError, ImportError) as e:
        raise OptionError(f"{checkpoint}: {e}") from None

    def batches(folder: str) -> list[int]:
        names = [posixpath.basename(p) for p in fs.ls(posixpath.join(root, folder), detail=False)] \
            if fs.isdir(posixpath.join(root, folder)) else []
        return sorted(int(n) for n in names if n.isdigit())

    if not fs.isdir(posixpath.join(root, "offsets")):
        raise NotFoundError(f"{checkpoint}: not a Spark checkpoint (no offsets/ folder)")
    committed = batches("commits")
    if not committed:
        return None
    batch = committed[-1]
    where = f"{checkpoint}/offsets/{batch}"
    try:
        lines = fs.cat_file(posixpath.join(root, "offsets", str(batch))).decode().splitlines()
    except FileNotFoundError:
        raise StateError(f"{where}: missing, but commits/{batch} exists: the checkpoint is damaged") from None
    ours = []
    for line in lines[2:]:
        try:
            offset = json.loads(line)
        except ValueError:
            continue  # "-" (a source without an offset) or another source's non-JSON offset
        if isinstance(offset, dict) and {"seq", "rec"} <= offset.keys() and offset.get("sid") in (stream_id, None):
            ours.append(offset)
    if len(ours) != 1:
        raise StateError(f"{where}: {'no' if not ours else 'more than one'} offset of stream {stream_id} (the "
                         "state's); the checkpoint belongs to another query, or the state folder to another stream")
    return batch, ours[0]
