"""Dask on a (small) LocalCluster: same seed, same result as in memory; capture as a Dask job."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import labelwise as lw
from labelwise._chunks import block_bytes
from labelwise.campaign import Campaign
from labelwise.dependability import k_activation_coverage
from labelwise.exceptions import LabelwiseError

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
zarr = pytest.importorskip("zarr")
torch = pytest.importorskip("torch")

N, D, C = 301, 10, 4


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def _pile() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    acts = rng.normal(size=(N, D)).astype(np.float32)
    logits = acts[:, :C] * 2 + rng.normal(size=(N, C)).astype(np.float32)
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    return acts, (p / p.sum(axis=1, keepdims=True)).astype(np.float32)


def _transitions(client: Any) -> int:
    """Task transitions the cluster's scheduler has logged (grows when tasks run there)."""

    def count(dask_scheduler: Any) -> int:
        return len(dask_scheduler.transition_log)

    return int(client.run_on_scheduler(count))


def test_samplers_and_campaign_on_a_local_cluster(client: Any) -> None:
    acts, probs = _pile()
    expected_css = lw.css_select(probs, 30, rng=2)
    expected_sds = lw.sds_select(np.stack([probs, probs[::-1], probs**2]), 20, rng=2)
    ref = Campaign(acts, probs, method="stratified", min_stratum_size=15, rng=4)
    before = _transitions(client)
    with block_bytes(512):
        got_css = lw.css_select(da.from_array(probs, chunks=(40, C)), 30, rng=2)
        stacked = da.from_array(np.stack([probs, probs[::-1], probs**2]), chunks=(3, 50, C))
        got_sds = lw.sds_select(stacked, 20, rng=2)
        camp = Campaign(
            da.from_array(acts, chunks=(64, D)),
            da.from_array(probs, chunks=(64, C)),
            method="stratified",
            min_stratum_size=15,
            rng=4,
        )
    assert _transitions(client) > before  # the passes ran as tasks on the cluster
    np.testing.assert_array_equal(got_css.indices, expected_css.indices)
    np.testing.assert_array_equal(got_css.strata, expected_css.strata)
    np.testing.assert_array_equal(got_sds.indices, expected_sds.indices)
    np.testing.assert_array_equal(camp.strata, ref.strata)
    np.testing.assert_array_equal(camp.propose(40), ref.propose(40))


def test_coverage_on_a_local_cluster(client: Any) -> None:
    acts, _ = _pile()
    expected = k_activation_coverage(acts, k=2)
    with block_bytes(1024):
        got = k_activation_coverage(da.from_array(acts, chunks=(50, D)), k=2)
    assert got.value == expected.value and got.n_inputs == N


def test_nan_on_a_worker_names_the_global_row(client: Any) -> None:
    _, probs = _pile()
    bad = probs.copy()
    bad[287, 1] = np.nan
    with block_bytes(512), pytest.raises(LabelwiseError, match="at row 287"):
        lw.css_select(da.from_array(bad, chunks=(40, C)), 30, rng=2)


def _model() -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(D, 16), torch.nn.ReLU(), torch.nn.Linear(16, C)
    ).eval()


def _inputs_zarr(tmp: Path, x: np.ndarray) -> str:
    path = str(tmp / "inputs.zarr")
    z = zarr.open_array(path, mode="w", shape=x.shape, chunks=(70, D), dtype=x.dtype)
    z[:] = x
    return path


def test_capture_to_zarr_equals_in_memory_capture(client: Any, tmp_path: Path) -> None:
    from labelwise.adapters.dask_capture import capture_to_zarr
    from labelwise.adapters.torch import capture

    x, _ = _pile()
    model = _model()
    expected = capture(model, x, progress=False)
    out = capture_to_zarr(model, _inputs_zarr(tmp_path, x), tmp_path / "cap", rows_per_task=64)
    assert out.n_blocks == 5 and out.layer == expected.layer
    np.testing.assert_array_equal(out.activations[:], expected.activations)
    np.testing.assert_array_equal(out.outputs[:], expected.outputs)
    assert sorted(p.name for p in (tmp_path / "cap").iterdir()) == [
        "activations.zarr",
        "outputs.zarr",
    ]


def test_capture_to_zarr_writes_nothing_on_nan(client: Any, tmp_path: Path) -> None:
    from labelwise.adapters.dask_capture import capture_to_zarr

    x, _ = _pile()
    x[250, 3] = np.nan
    with pytest.raises(LabelwiseError, match=r"inputs must be finite.*at row 250"):
        capture_to_zarr(_model(), _inputs_zarr(tmp_path, x), tmp_path / "cap", rows_per_task=64)
    assert not (tmp_path / "cap").exists()  # the out_dir it made is removed again


def test_capture_ships_the_model_to_worker_processes(tmp_path: Path) -> None:
    """With worker processes the model travels pickled (a live module's hooks would not)."""
    from labelwise.adapters.dask_capture import capture_to_zarr
    from labelwise.adapters.torch import capture

    x, _ = _pile()
    model = _model()
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster),
    ):
        out = capture_to_zarr(model, _inputs_zarr(tmp_path, x), tmp_path / "cap", rows_per_task=80)
    expected = capture(model, x, progress=False)
    np.testing.assert_array_equal(out.activations[:], expected.activations)
    np.testing.assert_array_equal(out.outputs[:], expected.outputs)
