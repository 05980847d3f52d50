"""Out of core and Dask: chunked passes give the in-memory results (issue 15).

Every sampler (except CES, tested in its own file), the campaign and the coverage metrics run
on the same pile held four ways - a memory-mapped .npy, a zarr array, a directory of .npy
chunks and a dask array - with the block budget forced so small that blocks split the CSS
strata, the campaign's strata and the coverage sections; the results must equal the
in-memory call with the same seed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import labelwise as lw
from labelwise._chunks import (
    ChunkedArray,
    block_bytes,
    first_nonfinite,
    map_rows,
    open_array,
    rows_per_block,
)
from labelwise._validation import check_finite_array
from labelwise.campaign import Campaign
from labelwise.dependability import k_activation_coverage
from labelwise.exceptions import LabelwiseError
from labelwise.quality import (
    ActivationProfile,
    boundary_conditioning,
    centroid_positioning,
    kmnc,
    nbc,
    neuron_coverage,
    pairwise_boundary_conditioning,
    snac,
    tknc,
)

zarr = pytest.importorskip("zarr")
da = pytest.importorskip("dask.array")

N, D, C, M = 403, 12, 5, 6
TINY = 1024  # bytes per block: 10 activation rows, 25 probability rows
FORMATS = ("memmap", "zarr", "chunks", "dask")


def _pile() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    acts = rng.normal(size=(N, D)).astype(np.float32)
    logits = acts[:, :C] * 2.0 + rng.normal(size=(N, C)).astype(np.float32)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs = (probs / probs.sum(axis=1, keepdims=True)).astype(np.float32)
    labels = rng.integers(0, C, size=N)
    preds = np.where(rng.random((M, N)) < 0.7, labels[None, :], rng.integers(0, C, (M, N)))
    pprobs = rng.dirichlet(np.ones(C), size=(M, N))
    return {
        "acts": acts,
        "probs": probs,
        "labels": labels,
        "preds": preds.astype(np.int64),
        "pprobs": pprobs,
    }


PILE = _pile()


def _as(fmt: str, x: np.ndarray, tmp: Path, name: str) -> Any:
    if fmt == "memmap":
        np.save(tmp / f"{name}.npy", x)
        return np.load(tmp / f"{name}.npy", mmap_mode="r")
    if fmt == "zarr":
        z = zarr.open_array(
            str(tmp / f"{name}.zarr"),
            mode="w",
            shape=x.shape,
            chunks=(37, *x.shape[1:]),
            dtype=x.dtype,
        )
        z[:] = x
        return zarr.open_array(str(tmp / f"{name}.zarr"), mode="r")
    if fmt == "chunks":
        d = tmp / name
        d.mkdir()
        n = x.shape[0]
        cuts = sorted({0, n // 8, n // 8 + 1, n // 2, n})
        for i, (a, b) in enumerate(itertools.pairwise(cuts)):
            np.save(d / f"part-{i:05d}.npy", x[a:b])
        return ChunkedArray.open(d)
    return da.from_array(x, chunks=(41, *x.shape[1:]))


@pytest.fixture(params=FORMATS)
def fmt(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def tiny() -> Iterator[None]:
    with block_bytes(TINY):
        yield


def _same_selection(a: lw.Selection, b: lw.Selection) -> None:
    np.testing.assert_array_equal(a.indices, b.indices)
    if a.strata is not None or b.strata is not None:
        np.testing.assert_array_equal(a.strata, b.strata)
    assert a.stratum_sizes == b.stratum_sizes


# --------------------------------------------------------------------------- the reader


def test_chunked_array_reads_like_the_concatenation(tmp_path: Path) -> None:
    x = PILE["acts"]
    c = _as("chunks", x, tmp_path, "a")
    assert c.shape == x.shape and len(c) == N and c.dtype == x.dtype and c.n_chunks == 4
    for sl in (slice(0, 10), slice(45, 175), slice(199, None), slice(400, 500), slice(3, 3)):
        np.testing.assert_array_equal(c[sl], x[sl])
    np.testing.assert_array_equal(c[[0, 50, 51, 402, 7]], x[[0, 50, 51, 402, 7]])
    np.testing.assert_array_equal(c[-1], x[-1])
    np.testing.assert_array_equal(np.asarray(c), x)


def test_chunked_array_rejects_mixed_chunks(tmp_path: Path) -> None:
    np.save(tmp_path / "part-0.npy", np.zeros((3, 4), np.float32))
    np.save(tmp_path / "part-1.npy", np.zeros((3, 5), np.float32))
    with pytest.raises(LabelwiseError, match=r"trailing shape \(4,\).*part-1.npy"):
        ChunkedArray.open(tmp_path)
    (tmp_path / "part-1.npy").unlink()
    np.save(tmp_path / "part-1.npy", np.zeros((3, 4), np.float64))
    with pytest.raises(LabelwiseError, match="dtype float32"):
        ChunkedArray.open(tmp_path)
    with pytest.raises(LabelwiseError, match=r"no \.npy files"):
        ChunkedArray.open(_empty_dir(tmp_path))


def _empty_dir(tmp: Path) -> Path:
    d = tmp / "empty"
    d.mkdir()
    return d


def test_open_array_by_path(tmp_path: Path) -> None:
    x = PILE["acts"]
    _as("memmap", x, tmp_path, "m")
    _as("zarr", x, tmp_path, "z")
    _as("chunks", x, tmp_path, "c")
    for p in ("m.npy", "z.zarr", "c"):
        np.testing.assert_array_equal(np.asarray(open_array(tmp_path / p)[:]), x)


def test_block_budget_sets_rows_per_block() -> None:
    assert rows_per_block((10**7, 256), np.float32) == 64 * 2**20 // (256 * 8)
    with block_bytes(TINY):
        assert rows_per_block((N, D), np.float32) == 10
        assert len(map_rows(lambda b, s: b.shape[0], PILE["acts"])) == 41
    with pytest.raises(LabelwiseError, match="positive integer"), block_bytes(0):
        pass


# --------------------------------------------------------------------------- samplers


SAMPLERS: dict[str, tuple[str, Callable[[Any], lw.Selection]]] = {
    "srs": ("acts", lambda x: lw.srs_select(x, 40, rng=3)),
    "css": ("probs", lambda x: lw.css_select(x, 40, rng=3)),
    "css-neyman": ("probs", lambda x: lw.css_select(x, 40, allocation="neyman", rng=3)),
    "ddg": ("probs", lambda x: lw.ddg_select(x, 40, rng=3)),
    "rdg": ("probs", lambda x: lw.rdg_select(x, 40, rng=3)),
    "rdg-models": ("pprobs", lambda x: lw.rdg_select(x, 40, combine="mean", rng=3)),
    "sds": ("preds", lambda x: lw.sds_select(x, 40, rng=3)),
    "sds-probs": ("pprobs", lambda x: lw.sds_select(x, 40, rng=3)),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_sampler_chunked_equals_in_memory(name: str, fmt: str, tmp_path: Path, tiny: None) -> None:
    key, run = SAMPLERS[name]
    x = PILE[key]
    with block_bytes(2**30):
        expected = run(x)
    got = run(_as(fmt, x, tmp_path, key))
    _same_selection(got, expected)


def test_css_blocks_split_the_strata(tiny: None) -> None:
    conf = PILE["probs"].max(axis=1)
    strata = lw.confidence_strata(conf)
    rows = rows_per_block(PILE["probs"].shape, PILE["probs"].dtype)
    assert rows < N // 10  # every stratum spans several blocks
    assert len(set(strata[:rows].tolist())) > 1 or len(set(strata[rows : 2 * rows])) > 1


def test_sds_discrimination_chunked(fmt: str, tmp_path: Path, tiny: None) -> None:
    with block_bytes(2**30):
        expected = lw.sds_discrimination(PILE["pprobs"])
    got = lw.sds_discrimination(_as(fmt, PILE["pprobs"], tmp_path, "pp"))
    np.testing.assert_array_equal(got.votes, expected.votes)
    np.testing.assert_array_equal(got.model_scores, expected.model_scores)
    np.testing.assert_array_equal(got.discrimination, expected.discrimination)


# --------------------------------------------------------------------------- campaign


@pytest.mark.parametrize("method", ["stratified", "auto", "srs"])
def test_campaign_chunked_equals_in_memory(
    method: str, fmt: str, tmp_path: Path, tiny: None
) -> None:
    acts, probs = PILE["acts"], PILE["probs"]
    # srs has no strata: min_stratum_size would be ignored (with a warning)
    size = {} if method == "srs" else {"min_stratum_size": 20}
    with block_bytes(2**30):
        ref = Campaign(acts, probs, method=method, rng=5, **size)
    camp = Campaign(
        _as(fmt, acts, tmp_path, "a"),
        _as(fmt, probs, tmp_path, "p"),
        method=method,
        rng=5,
        **size,
    )
    np.testing.assert_array_equal(camp.strata, ref.strata)
    assert len(np.unique(camp.strata)) > (0 if method == "srs" else 3)
    rng = np.random.default_rng(0)
    for _ in range(3):
        rows = camp.propose(25)
        np.testing.assert_array_equal(rows, ref.propose(25))
        scores = (rng.random(rows.size) < 0.8).astype(float)
        camp.record(rows, scores)
        ref.record(rows, scores)
    a, b = camp.estimate(), ref.estimate()
    assert a.value == pytest.approx(b.value, rel=1e-9, abs=1e-12)
    assert a.std_error == pytest.approx(b.std_error, rel=1e-9, abs=1e-12)


def test_regression_campaign_chunked(fmt: str, tmp_path: Path, tiny: None) -> None:
    acts = PILE["acts"]
    with block_bytes(2**30):
        ref = Campaign(acts, None, method="stratified", min_stratum_size=20, rng=5)
    camp = Campaign(
        _as(fmt, acts, tmp_path, "a"), None, method="stratified", min_stratum_size=20, rng=5
    )
    np.testing.assert_array_equal(camp.strata, ref.strata)
    np.testing.assert_array_equal(camp.propose(30), ref.propose(30))


# --------------------------------------------------------------------------- metrics


def test_coverage_metrics_chunked(fmt: str, tmp_path: Path, tiny: None) -> None:
    acts = PILE["acts"]
    train = np.random.default_rng(1).normal(size=(300, D)).astype(np.float32)
    x = _as(fmt, acts, tmp_path, "a")
    xt = _as(fmt, train, tmp_path, "t")
    with block_bytes(2**30):
        prof_ref = ActivationProfile.from_activations(train)
        expected = {
            "k2": k_activation_coverage(acts, k=2),
            "k3": k_activation_coverage(acts, k=3, threshold=0.5),
            "nc": neuron_coverage(acts, 0.5),
            "kmnc": kmnc(train, acts, 7),
            "nbc": nbc(train, acts),
            "snac": snac(train, acts),
            "tknc": tknc(acts, 2),
        }
    prof = ActivationProfile.from_activations(xt)
    np.testing.assert_array_equal(prof.min, prof_ref.min)
    np.testing.assert_array_equal(prof.max, prof_ref.max)
    np.testing.assert_allclose(prof.mean, prof_ref.mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(prof.std, prof_ref.std, rtol=1e-12)
    got = {
        "k2": k_activation_coverage(x, k=2),
        "k3": k_activation_coverage(x, k=3, threshold=0.5),
        "nc": neuron_coverage(x, 0.5),
        "kmnc": kmnc(xt, x, 7),
        "nbc": nbc(xt, x),
        "snac": snac(xt, x),
        "tknc": tknc(x, 2),
    }
    for key, want in expected.items():
        assert got[key].value == want.value, key
        assert got[key].n_inputs == N, key
    assert got["k3"].covered_by_order == expected["k3"].covered_by_order
    assert 0 < got["kmnc"].value < 1  # sections partly hit: the blocks split them


def test_feature_space_metrics_chunked(fmt: str, tmp_path: Path, tiny: None) -> None:
    acts, probs, labels = PILE["acts"], PILE["probs"], PILE["labels"]
    train, test = acts[:250], acts[250:]
    with block_bytes(2**30):
        cp_ref = centroid_positioning(train, labels[:250], test, labels[250:])
        bc_ref = boundary_conditioning(probs, labels, hi=0.5)
        pbc_ref = pairwise_boundary_conditioning(probs, labels, hi=0.5)
    cp = centroid_positioning(
        _as(fmt, train, tmp_path, "tr"), labels[:250], _as(fmt, test, tmp_path, "te"), labels[250:]
    )
    np.testing.assert_allclose(cp.centroids, cp_ref.centroids, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cp.distances, cp_ref.distances, rtol=1e-12)
    np.testing.assert_array_equal(cp.counts, cp_ref.counts)
    p = _as(fmt, probs, tmp_path, "p")
    bc = boundary_conditioning(p, labels, hi=0.5)
    np.testing.assert_array_equal(bc.in_band, bc_ref.in_band)
    np.testing.assert_array_equal(bc.counts, bc_ref.counts)
    pbc = pairwise_boundary_conditioning(p, labels, hi=0.5)
    np.testing.assert_array_equal(pbc.counts, pbc_ref.counts)


# --------------------------------------------------------------------------- bad input


def _zarr_with_nan(tmp: Path, row: int) -> Any:
    x = PILE["probs"].copy()
    x[row, 2] = np.nan
    return _as("zarr", x, tmp, "bad")


def test_nan_in_a_late_zarr_chunk_is_named_by_its_row(tmp_path: Path, tiny: None) -> None:
    bad = _zarr_with_nan(tmp_path, 391)
    assert first_nonfinite(bad) == 391
    for call in (
        lambda: lw.css_select(bad, 30, rng=0),
        lambda: lw.rdg_select(bad, 30, rng=0),
        lambda: Campaign(PILE["acts"], bad, rng=0),
        lambda: k_activation_coverage(bad),
        lambda: boundary_conditioning(bad, PILE["labels"]),
    ):
        with pytest.raises(LabelwiseError, match="at row 391"):
            call()
    acts = PILE["acts"].copy()
    acts[388, 0] = np.inf
    with pytest.raises(LabelwiseError, match=r"activations must be finite.*at row 388"):
        Campaign(da.from_array(acts, chunks=(50, D)), PILE["probs"], rng=0)


def test_nan_check_is_the_validation_check() -> None:
    x = np.zeros((5, 3))
    x[3, 1] = np.nan
    with pytest.raises(LabelwiseError, match=r"x must be finite.*at row 3"):
        check_finite_array(x, "x", ndim=2)
