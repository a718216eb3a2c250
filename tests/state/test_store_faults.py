"""A local ``stateLocation`` that fails while the query runs: a full file system, a read-only one, a folder removed.

Each is one :class:`StoreError` line naming the state folder and what is wrong; the state files are as they
were before the failed write (no new version, no temporary file left), and once the fault is gone a restart
delivers every change exactly once.

The file systems are real where the test may mount them: as root (``id -u`` 0, where ``chmod`` does not stop
writes) a small tmpfs is mounted, filled up, and remounted read-only. Without that right, a full disk is
simulated at the Storage level — ``os.fsync`` of the state's temporary file fails with ENOSPC, as a full file
system reports it at write-back — and read-only is ``chmod 0555`` of the state folder (skipped where that does
not stop this process's writes: root without the right to mount).
"""
from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from pathlib import Path

import pytest
from support.sim_query import SimQuery
from support.verify import change_feed, feed_differences

from hudi_streaming.errors import StoreError
from hudi_streaming.state import StateStore
from hudi_streaming.writer.loadgen import LoadGenerator

ROOT = os.geteuid() == 0


def _writable(folder: Path) -> bool:
    probe = folder / ".probe"
    try:
        probe.write_bytes(b"")
    except OSError:
        return False
    probe.unlink()
    return True


@pytest.fixture
def mount(tmp_path):
    """A 1 MiB tmpfs at ``tmp_path/mnt`` when this process may mount one, else None."""
    point = tmp_path / "mnt"
    point.mkdir()
    if not ROOT or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(point)],
                                  capture_output=True).returncode != 0:
        yield None
        return
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], capture_output=True)


class Stream:
    """A local table the writer commits to and a :class:`SimQuery` following it with its state in ``state``."""

    def __init__(self, tmp_path: Path, state: Path):
        self.gen = LoadGenerator(str(tmp_path / "table"), keys=60, partitions=2, seed=9, batch=10, name="state",
                                 late_share=0.0)
        self.steps = [self.gen.step()]
        self.state = state
        self.query = SimQuery(str(tmp_path / "table"), str(state), {
            "readMode": "changelog", "emitDeletes": "true", "startingInstant": self.steps[0].instant})

    def commit(self) -> None:
        self.steps.append(self.gen.step())

    def files(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(self.state.iterdir())}

    def fail(self) -> StoreError:
        """A commit, then the query's run, which must stop with one StoreError line naming the state folder."""
        self.commit()
        with pytest.raises(StoreError) as e:
            self.query.run()
        message = str(e.value)
        assert "\n" not in message and message.startswith(str(self.state)), message
        return e.value

    def check(self) -> None:
        """The state loads, and every change the writer committed arrived exactly once."""
        assert StateStore(str(self.state)).newest() is not None
        assert feed_differences(change_feed(self.steps), self.query.rows) == {"duplicated": [], "lost": [],
                                                                              "unexpected": []}


def test_a_full_file_system_stops_the_query_and_keeps_the_state(tmp_path, mount, monkeypatch):
    stream = Stream(tmp_path, (mount or tmp_path) / "state")
    stream.query.run()
    before = stream.files()
    if mount is not None:
        filler = mount / "filler"
        with open(filler, "wb") as f, contextlib.suppress(OSError):
            while True:  # until the file system is full
                f.write(b"\0" * 65536)
                f.flush()
    else:
        real = os.fsync

        def full(fd):
            if os.readlink(f"/proc/self/fd/{fd}").startswith(str(stream.state)):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(fd)
        monkeypatch.setattr(os, "fsync", full)
    error = stream.fail()
    assert "No space left on device" in str(error)
    assert stream.files() == before  # no new version, no temporary file
    if mount is not None:
        filler.unlink()
    else:
        monkeypatch.undo()
    stream.commit()
    stream.query.run()  # the restart
    stream.check()


def test_a_read_only_state_folder_stops_the_query_and_keeps_the_state(tmp_path, mount):
    stream = Stream(tmp_path, (mount or tmp_path) / "state")
    stream.query.run()
    before = stream.files()
    if mount is not None:
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
    else:
        stream.state.chmod(0o555)
        if _writable(stream.state):
            stream.state.chmod(0o755)
            pytest.skip("this process writes through chmod 0555 (root) and may not mount a read-only file system")
    error = stream.fail()
    assert ("Read-only file system" if mount is not None else "Permission denied") in str(error)
    assert stream.files() == before
    if mount is not None:
        subprocess.run(["mount", "-o", "remount,rw", str(mount)], check=True)
    else:
        stream.state.chmod(0o755)
    stream.commit()
    stream.query.run()
    stream.check()


def test_a_state_folder_removed_while_the_query_runs_is_not_made_again(tmp_path):
    """A folder that is gone is not recreated with a state naming segments that went with it: the query stops;
    put back, the folder resumes the stream."""
    stream = Stream(tmp_path, tmp_path / "state")
    stream.query.run()
    before = stream.files()
    aside = tmp_path / "state-moved-away"
    stream.state.rename(aside)
    error = stream.fail()
    assert "the state folder is gone" in str(error)
    assert not stream.state.exists()
    aside.rename(stream.state)
    assert stream.files() == before
    stream.commit()
    stream.query.run()
    stream.check()


def test_a_state_folder_removed_between_batches_fails_the_commit_and_the_restart_resumes(tmp_path, monkeypatch):
    """The folder disappears right after a batch reached the sink, before the source's commit saved the state: that
    save fails; Spark has the batch committed, so the restart resumes after it, nothing twice."""
    stream = Stream(tmp_path, tmp_path / "state")
    stream.query.run()
    stream.commit()
    aside = tmp_path / "state-moved-away"
    batch = SimQuery._batch

    def sink_then_remove(query, batch_id, start, end):
        commit = query.reader.commit

        def removed_first(offset):
            if stream.state.exists():
                stream.state.rename(aside)
            return commit(offset)
        query.reader.commit = removed_first
        return batch(query, batch_id, start, end)
    monkeypatch.setattr(SimQuery, "_batch", sink_then_remove)
    with pytest.raises(StoreError, match="the state folder is gone"):
        stream.query.run()
    monkeypatch.undo()
    aside.rename(stream.state)
    stream.commit()
    stream.query.run()
    stream.check()
