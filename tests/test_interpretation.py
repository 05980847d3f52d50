"""Tests for labelwise.dependability.interpretation (Cheng et al. 2018, II-F and II-G)."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from labelwise.dependability.interpretation import (
    InterpretationResult,
    InterpretationSweep,
    interpretation_metrics,
    occluding_positions,
    occlusion_grid_shape,
    plot_sweep,
    precision_and_sensitivity,
    sweep,
)
from labelwise.exceptions import DegenerateDataWarning, LabelwiseError

# --------------------------------------------------------------------------- paper example


def test_paper_example_from_position_sets() -> None:
    """Fig. 3b: 9 hot, 30 occluding, 5 both -> 5/9 and 5/30."""
    hot = np.zeros((10, 10), dtype=bool)
    occluding = np.zeros((10, 10), dtype=bool)
    occluding[2:8, 3:8] = True  # 30 positions: the pedestrian
    hot[2, 3:8] = True  # 5 on the head
    hot[9, 0:4] = True  # 4 elsewhere
    r = precision_and_sensitivity(hot, occluding)
    assert isinstance(r, InterpretationResult)
    assert (r.n_hot[0], r.n_occluding[0], r.n_hot_occluding[0]) == (9, 30, 5)
    assert r.interpret == pytest.approx(5 / 9)
    assert r.occsen == pytest.approx(5 / 30)
    assert r.notes == ()


def test_paper_example_from_heatmap_and_mask() -> None:
    """The same numbers through a heatmap (score under occlusion) and a pixel mask."""
    mask = np.zeros((12, 12), dtype=bool)
    mask[3:9, 4:9] = True  # 30 pixels
    heatmap = np.full((12, 12), 0.9)  # 1x1 windows: positions are pixels
    heatmap[3, 4:9] = 0.1  # 5 hot on the object
    heatmap[11, 0:4] = 0.2  # 4 hot on the background
    r = interpretation_metrics(heatmap, mask, rho=0.5, window=1, stride=1)
    assert r.interpret == pytest.approx(5 / 9)
    assert r.occsen == pytest.approx(5 / 30)
    assert (r.rho, r.window, r.stride) == (0.5, (1, 1), (1, 1))
    # hot is strict: h == rho is not hot
    assert interpretation_metrics(heatmap, mask, rho=0.2, window=1, stride=1).n_hot[0] == 5
    # a batch of two identical objects averages to the same values
    rb = interpretation_metrics(np.stack([heatmap, heatmap]), mask, rho=0.5, window=1, stride=1)
    assert rb.per_image_interpret.tolist() == pytest.approx([5 / 9, 5 / 9])
    assert rb.occsen == pytest.approx(5 / 30)


def test_paper_example_with_overlapping_windows() -> None:
    """4x4 windows, stride 2, on a 22x22 image: positions on a 10x10 grid."""
    assert occlusion_grid_shape((22, 22), window=4, stride=2) == (10, 10)
    mask = np.zeros((22, 22), dtype=bool)
    mask[9:10, 11:12] = True  # one pixel: windows with rows 3..4 (start 6, 8), cols 4..5
    occ = occluding_positions(mask, window=4, stride=2)
    assert np.argwhere(occ).tolist() == [[3, 4], [3, 5], [4, 4], [4, 5]]
    heat = np.ones((10, 10))
    heat[3, 4] = heat[0, 0] = 0.0
    r = interpretation_metrics(heat, mask, rho=0.5, window=4, stride=2)
    assert (r.interpret, r.occsen) == (0.5, 0.25)


def test_occluding_positions_match_brute_force() -> None:
    rng = np.random.default_rng(3)
    for shape, win, st in [((16, 16), (4, 4), (2, 2)), ((13, 10), (5, 3), (3, 2))]:
        mask = rng.random((3, *shape)) < 0.03
        occ = occluding_positions(mask, window=win, stride=st)
        n_rows, n_cols = occlusion_grid_shape(shape, window=win, stride=st)
        assert occ.shape == (3, n_rows, n_cols)
        for i in range(n_rows):
            for j in range(n_cols):
                block = mask[:, i * st[0] : i * st[0] + win[0], j * st[1] : j * st[1] + win[1]]
                assert occ[:, i, j].tolist() == block.any(axis=(1, 2)).tolist()
    # the last window is cut at the edge, so every pixel is covered: (13 - 5) / 3 -> 4 rows
    assert occlusion_grid_shape((13, 10), window=(5, 3), stride=(3, 2)) == (4, 5)


def test_empty_sets_give_zero_with_a_warning() -> None:
    mask = np.zeros((8, 8), dtype=bool)
    mask[2:4, 2:4] = True
    heat = np.ones((8, 8))
    with pytest.warns(DegenerateDataWarning, match="no hot position"):
        r = interpretation_metrics(heat, mask, rho=0.5, window=1, stride=1)
    assert (r.interpret, r.occsen) == (0.0, 0.0)
    with pytest.warns(DegenerateDataWarning, match="empty mask"):
        r = precision_and_sensitivity(np.ones(5, bool), np.zeros(5, bool))
    assert (r.interpret, r.occsen) == (0.0, 0.0)
    assert len(r.notes) == 1
    assert not any(math.isnan(v) for v in r.to_dict()["per_image_interpret"])


def test_sweep_on_constructed_heatmap(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    mask = np.zeros((12, 12), dtype=bool)
    mask[3:9, 4:9] = True
    heat = rng.random((12, 12))
    rhos = np.linspace(0.05, 1.0, 20)
    s = sweep(heat, mask, rhos[::-1], window=1, stride=1)  # sorted ascending
    assert isinstance(s, InterpretationSweep)
    assert np.all(np.diff(s.rhos) > 0)
    assert np.all(np.diff(s.n_hot) >= 0)
    assert np.all(np.diff(s.occsen) >= 0)
    assert s.occsen[-1] == pytest.approx(1.0)
    for k in (0, 7, 19):
        single = interpretation_metrics(heat, mask, rho=s.rhos[k], window=1, stride=1)
        assert s.interpret[k] == pytest.approx(single.interpret)
        assert s.occsen[k] == pytest.approx(single.occsen)
    out = plot_sweep(s, tmp_path / "sweep.png")
    assert out is not None and out.stat().st_size > 0


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mask": np.ones((12, 16), bool)}, "mask"),
        ({"mask": np.ones((3, 16, 16), bool)}, "mask"),
        ({"mask": np.full((16, 16), 2)}, "mask"),
        ({"window": (20, 4)}, "window"),
        ({"window": 0}, "window"),
        ({"stride": (0, 2)}, "stride"),
        ({"stride": (5, 5)}, "stride"),
        ({"rho": float("nan")}, "rho"),
        ({"rho": float("inf")}, "rho"),
        ({"rho": "high"}, "rho"),
        ({"heatmap": np.full((7, 7), np.nan)}, "heatmap"),
    ],
)
def test_bad_input_names_the_argument(kwargs: dict[str, object], match: str) -> None:
    args: dict[str, object] = {
        "heatmap": np.zeros((2, 7, 7)),
        "mask": np.ones((16, 16), bool),
        "rho": 0.5,
        "window": (4, 4),
        "stride": (2, 2),
    }
    args.update(kwargs)
    with pytest.raises(LabelwiseError, match=match):
        interpretation_metrics(args.pop("heatmap"), args.pop("mask"), **args)  # type: ignore[arg-type]


def test_bad_position_sets_and_rhos() -> None:
    with pytest.raises(LabelwiseError, match="occluding"):
        precision_and_sensitivity(np.ones((3, 3), bool), np.ones((3, 4), bool))
    with pytest.raises(LabelwiseError, match="hot"):
        precision_and_sensitivity(np.full(4, 0.5), np.ones(4, bool))
    with pytest.raises(LabelwiseError, match="rhos"):
        sweep(np.ones((7, 7)), np.ones((16, 16), bool), [0.1, np.inf])
    with pytest.raises(LabelwiseError, match="rhos"):
        sweep(np.ones((7, 7)), np.ones((16, 16), bool), [])
    with pytest.raises(LabelwiseError, match="result"):
        plot_sweep("not a sweep", "x.png")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- end to end

torch = pytest.importorskip("torch")
pytest.importorskip("captum")

from labelwise.dependability.interpretation import (  # noqa: E402
    OcclusionHeatmaps,
    occlusion_heatmaps,
)

SIZE = 16
SIDE = 3  # object side; a 4x4 window with stride 2 always covers it whole


def make_squares(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n, 1, 16, 16) noisy textured images, half with a bright 3x3 square; labels; masks."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:SIZE, 0:SIZE]
    images = np.empty((n, 1, SIZE, SIZE), dtype=np.float32)
    masks = np.zeros((n, SIZE, SIZE), dtype=bool)
    labels = (np.arange(n) % 2).astype(np.int64)
    for k in range(n):
        phase, freq = rng.uniform(0, 2 * np.pi), rng.uniform(0.3, 1.0)
        texture = 0.15 * np.sin(freq * (xx + yy) + phase)
        images[k, 0] = 0.3 + texture + rng.normal(0, 0.08, (SIZE, SIZE))
        if labels[k]:
            r, c = rng.integers(0, SIZE - SIDE + 1, size=2)
            masks[k, r : r + SIDE, c : c + SIDE] = True
            images[k, 0][masks[k]] = 1.0
    return images, labels, masks


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread() -> Iterator[None]:
    """Tiny models: one thread avoids contention slowdowns on busy machines."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def trained() -> tuple[object, np.ndarray, np.ndarray, np.ndarray]:
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveMaxPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 2),
    )
    x, y, _ = make_squares(1200, seed=1)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(0)
    for _ in range(6):
        for idx in torch.randperm(len(xt), generator=gen).split(64):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
    model.eval()
    x_test, y_test, m_test = make_squares(200, seed=2)
    with torch.no_grad():
        accuracy = (model(torch.from_numpy(x_test)).argmax(1).numpy() == y_test).mean()
    assert accuracy > 0.9
    return model, x_test, y_test, m_test


def test_end_to_end_occlusion_metrics(trained: tuple, tmp_path: Path) -> None:
    model, x_test, y_test, m_test = trained
    present = np.flatnonzero(y_test == 1)[:40]
    images, masks = x_test[present], m_test[present]
    model.train()  # restored afterwards
    maps = occlusion_heatmaps(
        model,
        images,
        np.ones(len(present), dtype=np.int64),
        window=(4, 4),
        stride=(2, 2),
        baseline=0.0,
        batch_size=16,
    )
    assert model.training
    assert isinstance(maps, OcclusionHeatmaps)
    assert maps.heatmaps.shape == (40, 7, 7)
    assert maps.attributions.shape == images.shape
    assert np.all((maps.heatmaps >= 0) & (maps.heatmaps <= 1))
    assert np.median(maps.base_scores) > 0.9
    # targets=None scores the predicted class, here the same
    again = occlusion_heatmaps(model, torch.from_numpy(images[:8]), batch_size=5)
    assert again.targets is not None and again.targets.tolist() == [1] * 8
    assert np.allclose(again.heatmaps, maps.heatmaps[:8], atol=1e-6)

    rho = 0.5
    true = interpretation_metrics(maps.heatmaps, masks, rho=rho, window=4, stride=2)
    assert 0 <= true.interpret <= 1 and 0 <= true.occsen <= 1
    assert true.n_hot.min() >= 1  # occluding the whole square always breaks the decision
    shifted = np.roll(masks, shift=(8, 8), axis=(1, 2))
    other = interpretation_metrics(maps.heatmaps, shifted, rho=rho, window=4, stride=2)
    assert true.interpret > 0.8
    assert true.interpret > other.interpret + 0.5
    assert true.occsen > other.occsen

    rhos = np.linspace(0.0, 0.99, 15)  # rho = 0: nothing is hot
    with pytest.warns(DegenerateDataWarning):  # no hot position at the lowest thresholds
        s = sweep(maps.heatmaps, masks, rhos, window=4, stride=2)
    assert np.all(np.diff(s.n_hot) >= 0) and np.all(np.diff(s.occsen) >= 0)
    assert np.all((s.interpret >= 0) & (s.interpret <= 1))
    assert plot_sweep(s, tmp_path / "sweep.png") is not None


def test_occlusion_of_a_model_ending_in_softmax_reads_its_probabilities(trained: tuple) -> None:
    # the heatmap is the class probability under occlusion; a final softmax layer must not be
    # softmaxed again (two classes: every score would be squeezed into [0.27, 0.73])
    model, x_test, y_test, _ = trained
    images, targets = x_test[:12], y_test[:12]
    plain = occlusion_heatmaps(model, images, targets, window=4, stride=4)
    ending = torch.nn.Sequential(model, torch.nn.Softmax(dim=1))
    maps = occlusion_heatmaps(ending, images, targets, window=4, stride=4)
    np.testing.assert_allclose(maps.heatmaps, plain.heatmaps, atol=1e-6)
    np.testing.assert_allclose(maps.base_scores, plain.base_scores, atol=1e-6)


def test_score_fn_for_detector_like_outputs(trained: tuple) -> None:
    """A dict output scored by score_fn(output, targets_batch), targets passed in slices."""
    model, x_test, y_test, _ = trained
    images = x_test[y_test == 1][:6]

    class Detector(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = model

        def forward(self, x):  # type: ignore[no-untyped-def]
            return {"scores": self.net(x).softmax(1)}

    seen: list[list[int]] = []

    def score_fn(output, tb):  # type: ignore[no-untyped-def]
        seen.append(list(tb))
        return output["scores"][torch.arange(len(tb)), torch.as_tensor(tb)]

    maps = occlusion_heatmaps(Detector(), images, [1] * 6, score_fn=score_fn, batch_size=4)
    assert maps.targets is None and maps.heatmaps.shape == (6, 7, 7)
    ref = occlusion_heatmaps(model, images, np.ones(6, dtype=np.int64))
    assert np.allclose(maps.heatmaps, ref.heatmaps, atol=1e-6)
    assert {len(t) for t in seen} == {4, 2}
    with pytest.raises(LabelwiseError, match="score_fn"):
        occlusion_heatmaps(Detector(), images, score_fn=lambda out, tb: out["scores"])


def test_occlusion_heatmaps_bad_input(trained: tuple) -> None:
    model, x_test, _, _ = trained
    x = x_test[:2]
    with pytest.raises(LabelwiseError, match="window"):
        occlusion_heatmaps(model, x, window=(17, 4))
    with pytest.raises(LabelwiseError, match="stride"):
        occlusion_heatmaps(model, x, stride=0)
    with pytest.raises(LabelwiseError, match="baseline"):
        occlusion_heatmaps(model, x, baseline=float("nan"))
    with pytest.raises(LabelwiseError, match="targets"):
        occlusion_heatmaps(model, x, [1, 1, 1])
    with pytest.raises(LabelwiseError, match="targets"):
        occlusion_heatmaps(model, x, [0, 5])
    with pytest.raises(LabelwiseError, match="images"):
        occlusion_heatmaps(model, x[:, 0, 0])


def test_missing_captum_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from labelwise.exceptions import MissingDependencyError

    monkeypatch.setitem(sys.modules, "captum.attr", None)
    # captum is in the 'dependability' extra (read from labelwise's own extras table)
    with pytest.raises(MissingDependencyError, match=r"pip install 'labelwise\[dependability\]'"):
        occlusion_heatmaps(torch.nn.Linear(2, 2), np.zeros((1, 4, 4)))


def test_dependability_command_with_masks(trained: tuple, tmp_path: Path) -> None:
    import json
    import warnings

    from labelwise.cli import main

    model, x, y, masks = trained
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TorchScript is deprecated in 2.13
        torch.jit.save(torch.jit.script(model), str(tmp_path / "m.pt"))
    keep = y == 1  # images that hold an object
    np.save(tmp_path / "x.npy", x[keep])
    np.save(tmp_path / "y.npy", y[keep])
    np.save(tmp_path / "masks.npy", masks[keep])
    out = tmp_path / "dep"
    args = [
        "dependability",
        "--model",
        str(tmp_path / "m.pt"),
        "--inputs",
        str(tmp_path / "x.npy"),
        "--labels",
        str(tmp_path / "y.npy"),
        "--masks",
        str(tmp_path / "masks.npy"),
        "--window",
        "4",
        "--stride",
        "2",
        "--rho",
        "0.5",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    doc = json.loads((out / "dependability.json").read_text())
    values = {r["metric"]: r["value"] for r in doc["summary"]}
    direct = interpretation_metrics(
        occlusion_heatmaps(model, x[keep], y[keep], window=(4, 4), stride=(2, 2)).heatmaps,
        masks[keep],
        rho=0.5,
        window=(4, 4),
        stride=(2, 2),
    )
    assert values["interpretation precision"] == pytest.approx(direct.interpret)
    assert values["occlusion sensitivity covering"] == pytest.approx(direct.occsen)
    details = {r["metric"]: r["detail"] for r in doc["summary"]}
    assert "images" in details["interpretation precision"]
    assert (out / "interpretation.png").exists()
    np.save(tmp_path / "few.npy", masks[keep][:3])
    assert main([*args[:-2], "--masks", str(tmp_path / "few.npy"), "--out", str(out)]) == 2
    # --rho is the occluded class probability: 2 made every window hot (accepted before)
    before = (out / "dependability.json").read_text()
    bad = [a if a != "0.5" else "2" for a in args]
    assert main(bad) == 2
    assert (out / "dependability.json").read_text() == before


def test_precision_detail_says_how_many_images_count_as_zero() -> None:
    """Interpretation precision averaged in a 0 for every image no occlusion pushed below rho
    (0/0), and the summary called the mean 'hot windows on the object': 123 of 597 digits gave
    0.63 where the images that define it average 0.79. The detail now says both."""
    from labelwise.cli.dependability import _counted_as_zero

    per_image = np.array([0.0, 0.8, 0.6, 0.0])
    n_hot = np.array([0, 5, 5, 3])
    assert _counted_as_zero(per_image, n_hot, "no hot window") == (
        "; 1 of 4 images have no hot window and count as 0 (mean over the other 3 0.4667)"
    )
    assert _counted_as_zero(per_image, np.ones(4), "x") == "; mean over 4 images"
    assert "no image defines it" in _counted_as_zero(np.zeros(2), np.zeros(2), "x")
