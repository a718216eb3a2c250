"""``merge.KeyIndex`` answers exactly as ``pc.index_in`` (the first-piece-row lookup of the merge depends on it),
whichever way it answers: by hash, by hash with collisions, or falling back to ``index_in``."""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from hudi_streaming.hoodie import merge
from hudi_streaming.hoodie.merge import KeyIndex


@pytest.fixture(autouse=True)
def hashed_from_the_first_key(monkeypatch):
    """The hashed lookup whatever the number of keys (it starts at 131,072 keys otherwise)."""
    monkeypatch.setattr(KeyIndex, "HASHED_FROM", 0)


def _index_in(probe: pa.Array, keys: pa.Array) -> list[int]:
    return pc.fill_null(pc.index_in(probe, value_set=keys), -1).to_pylist()


def _by_length(keys: pa.Array) -> np.ndarray | None:
    """A hash that collides a lot: a key's length."""
    return None if keys.null_count else np.asarray(pc.utf8_length(keys).to_numpy(zero_copy_only=False), np.uint64)


@pytest.mark.parametrize("seed", range(5))
def test_random_keys_are_found_as_index_in_finds_them(seed):
    rng = random.Random(seed)
    universe = [f"key-{rng.randrange(10**6)}-{'x' * rng.randrange(3)}" for _ in range(3000)]
    keys = pa.array(list(dict.fromkeys(rng.sample(universe, 800))), pa.string())
    probe = pa.array([rng.choice(universe) for _ in range(2000)], pa.string())  # repeats, misses and hits
    index = KeyIndex(keys)
    assert index.order is not None  # answered by hash
    assert index.slots(probe).tolist() == _index_in(probe, keys)
    assert index.slots(probe.slice(0, 0)).tolist() == []
    assert KeyIndex(keys.slice(0, 0)).slots(probe).tolist() == [-1] * len(probe)


def test_a_probe_colliding_with_a_key_is_no_match(monkeypatch):
    monkeypatch.setattr(merge, "_hashes", _by_length)
    keys = pa.array(["a", "bb", "ccc"])
    index = KeyIndex(keys)
    assert index.order is not None  # distinct lengths: answered by hash
    probe = pa.array(["x", "bb", "yyy", "ccc", "dddd", "a", "bb"])
    assert index.slots(probe).tolist() == [-1, 1, -1, 2, -1, 0, 1] == _index_in(probe, keys)


def test_keys_sharing_a_hash_fall_back_to_index_in(monkeypatch):
    monkeypatch.setattr(merge, "_hashes", _by_length)
    keys = pa.array(["ab", "cd", "e"])
    index = KeyIndex(keys)
    assert index.order is None  # "ab" and "cd" collide: a hit on one could hide the other
    probe = pa.array(["cd", "ab", "zz", "e"])
    assert index.slots(probe).tolist() == [1, 0, -1, 2]


def test_null_keys_fall_back_to_index_in():
    with_null = pa.array(["a", None, "b"])
    assert KeyIndex(with_null).slots(pa.array([None, "b", "c"])).tolist() == [1, 2, -1]
    assert KeyIndex(pa.array(["a", "b"])).slots(pa.array([None, "b"])).tolist() == [-1, 1]


def test_with_few_keys_it_is_index_in(monkeypatch):
    keys = pa.array(["k1", "k2", "k3"])
    monkeypatch.setattr(KeyIndex, "HASHED_FROM", 4)
    index = KeyIndex(keys)
    assert index.order is None
    assert index.slots(pa.array(["k3", "k0", "k1"])).tolist() == [2, -1, 0]
