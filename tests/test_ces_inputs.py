"""CES on piles that are not one in-memory array (issue 15): a memory-mapped ``.npy``, a zarr
array, a dask array and non-contiguous or integer arrays read block by block. Each gives the
in-memory selection (same seed, same rows), with block boundaries that split the sections'
rows; a NaN or infinity in a late block is reported with its row in the whole pile before any
section is counted, and the pile is left as it was."""

from __future__ import annotations

import warnings
from typing import Any, cast

import numpy as np
import pytest

import labelwise as lw
import labelwise.sampling.ces as ces_mod
from labelwise.sampling import _ces_kernels as kern


def _pile(n: int = 900, m: int = 24, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 4)) @ rng.standard_normal((4, m))
    return np.maximum(z + rng.standard_normal((n, m)) - 0.3, 0.0).astype(np.float32)


PILE = _pile()


def _zarr(x: np.ndarray, rows_per_chunk: int) -> Any:
    zarr = pytest.importorskip("zarr")
    z = zarr.create_array(
        store=zarr.storage.MemoryStore(),
        shape=x.shape,
        chunks=(rows_per_chunk, *x.shape[1:]),
        dtype=x.dtype,
    )
    z[:] = x
    return z


def _dask(x: np.ndarray, rows_per_chunk: int) -> Any:
    da = pytest.importorskip("dask.array")
    return da.from_array(x, chunks=(rows_per_chunk, *x.shape[1:]))


def _select(x: Any, budget: int = 80, **kw: Any) -> lw.Selection:
    return lw.ces_select(x, budget, rng=3, **kw)


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 7 rows (24 float32 columns): many block boundaries inside every section."""
    monkeypatch.setattr(ces_mod, "BLOCK_BYTES", 7 * 24 * 4)


WANT = _select(PILE)
WANT_CE = _select(PILE, objective="ce", group_size=3)


@pytest.mark.parametrize(
    "make",
    [
        lambda x: _zarr(x, 64),
        lambda x: _zarr(x, 1000),
        lambda x: _dask(x, 70),
        lambda x: np.asfortranarray(x),
        lambda x: np.concatenate([x, x], axis=1)[:, : x.shape[1]],
    ],
    ids=["zarr-64", "zarr-one-chunk", "dask-70", "fortran", "strided"],
)
@pytest.mark.usefixtures("small_blocks")
def test_block_by_block_reads_give_the_in_memory_selection(make: Any) -> None:
    x = make(PILE)
    assert _select(x).indices.tolist() == WANT.indices.tolist()
    assert _select(x, objective="ce", group_size=3).indices.tolist() == WANT_CE.indices.tolist()
    ext = lw.extend(_select(x, 50), x, 30)
    assert ext.indices.tolist() == lw.extend(_select(PILE, 50), PILE, 30).indices.tolist()


def test_the_block_size_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    z = _zarr(PILE, 50)
    for block_bytes in (1, 13 * 24 * 4, 1 << 25):
        monkeypatch.setattr(ces_mod, "BLOCK_BYTES", block_bytes)
        assert _select(z).indices.tolist() == WANT.indices.tolist()


@pytest.mark.usefixtures("small_blocks")
def test_memmap_and_higher_rank_zarr(tmp_path: Any) -> None:
    np.save(tmp_path / "pile.npy", PILE)
    mm = np.load(tmp_path / "pile.npy", mmap_mode="r")
    assert _select(mm).indices.tolist() == WANT.indices.tolist()
    z = _zarr(PILE.reshape(900, 4, 6), 64)
    assert _select(z).indices.tolist() == WANT.indices.tolist()


@pytest.mark.usefixtures("small_blocks")
def test_integer_piles_are_converted_block_by_block() -> None:
    x = np.random.default_rng(5).integers(0, 30, size=(400, 24))
    want = _select(x.astype(np.float64))
    assert _select(x).indices.tolist() == want.indices.tolist()
    assert _select(_zarr(x, 33)).indices.tolist() == want.indices.tolist()


@pytest.mark.parametrize("kind", ["zarr", "dask", "array"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_in_a_late_block_is_reported_with_its_row_before_counting(
    kind: str, bad: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ces_mod, "BLOCK_BYTES", 64 * 24 * 4)
    x = PILE.copy()
    x[871, 5] = bad
    pile = {"zarr": lambda: _zarr(x, 64), "dask": lambda: _dask(x, 64), "array": lambda: x}[kind]()
    before = np.array(pile[:], copy=True)

    def no_counting(*args: Any) -> None:
        raise AssertionError("sections were counted before the NaN was reported")

    monkeypatch.setattr(kern, "histogram_pass", no_counting)
    with pytest.raises(lw.LabelwiseError, match=r"activations must be finite.*at row 871\b"):
        lw.ces_select(pile, 50, rng=0)
    np.testing.assert_array_equal(np.asarray(pile[:]), before)  # nothing written


def test_constant_columns_of_a_zarr_pile_are_ignored() -> None:
    x = PILE.copy()
    x[:, 2] = 1.25
    want = lw.ces_select(np.delete(x, 2, axis=1), 60, rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.warns(lw.DegenerateDataWarning, match="1 of 24 neurons are constant"):
            got = lw.ces_select(_zarr(x, 64), 60, rng=1)
    assert got.indices.tolist() == want.indices.tolist()


@pytest.mark.parametrize(
    ("shape", "dtype", "match"),
    [((0, 4), np.float32, "at least 1 row"), ((5,), np.float32, "2-D"), ((4, 3), "U1", "numbers")],
)
def test_malformed_lazy_piles_are_rejected_without_reading(
    shape: tuple[int, ...], dtype: Any, match: str
) -> None:
    class Lazy:
        def __init__(self) -> None:
            self.shape = shape
            self.dtype = np.dtype(dtype)

        def __getitem__(self, item: Any) -> Any:
            raise AssertionError("read")

    with pytest.raises(lw.LabelwiseError, match=match):
        lw.ces_select(cast(Any, Lazy()), 1, rng=0)


def test_free_rows_map_positions_like_a_pool_array() -> None:
    rng = np.random.default_rng(0)
    taken = rng.choice(200, size=37, replace=False)
    free = ces_mod._FreeRows(200, taken[:30])
    free.take(taken[30:])
    pool = np.setdiff1d(np.arange(200), taken)
    assert free.size == pool.size
    assert np.array_equal(free[np.arange(pool.size)], pool)
