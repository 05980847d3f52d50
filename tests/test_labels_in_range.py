"""Labels outside the classes: one check (check_classes_in_range), one message everywhere.

The same check stood in six places with five messages: some named the bad values only, some
their positions, the CLI's their rows, one (RankingCampaign.record) neither. Each now says
the range and where it comes from, the bad values and their rows (positions when the labels
are not tied to rows of a pile), and what to check.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np
import pytest

import labelwise as lw
from labelwise._scoring import selection_scores
from labelwise._validation import check_classes_in_range
from labelwise.dependability import scenario_performance
from labelwise.workspace import Workspace
from synthetic import classifier_pile, run_cli

HINT = "are the labels of another model or numbered from 1?"


def _raises(message: str) -> pytest.RaisesExc[lw.LabelwiseError]:
    return pytest.raises(lw.LabelwiseError, match=f"^{re.escape(message)}$")


def test_the_helper_names_values_and_rows_or_positions() -> None:
    y = np.array([0, 3, 1, -1, 2])
    with _raises(
        f"labels must be classes in [0, 3) (the model has 3 output columns), got [3, -1] "
        f"at positions [1, 3]; {HINT}"
    ):
        check_classes_in_range(y, 3, "labels")
    with _raises(f"y must be classes in [0, 3), got [3, -1] at rows [11, 13]; {HINT}"):
        check_classes_in_range(y, 3, "y", rows=np.arange(10, 15), why=None)
    with _raises(f"y must be classes in [0, 4), got [-1] at rows [3]; {HINT}"):
        check_classes_in_range(y, 4, "y", rows=np.arange(5), why=None)
    check_classes_in_range(np.arange(12) % 3, 3, "y")  # all in range: no error
    many = np.full(12, 9)
    with pytest.raises(lw.LabelwiseError, match=re.escape(f"got {[9] * 10} at positions")):
        check_classes_in_range(many, 3, "y")  # the first 10 shown


def test_every_place_gives_the_one_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    probs = np.eye(3)[[0, 1, 2, 0, 1, 2]]
    # estimation.correctness (before: "... got [3] at positions [1]", 5 shown)
    with _raises(
        "labels must be classes in [0, 3) (the 3 columns of the probabilities), got [3] at "
        f"positions [1]; {HINT}"
    ):
        lw.correctness(probs, [0, 3, 2, 0, 1, 2])
    with _raises(f"labels must be classes in [0, 2), got [2, 2] at positions [2, 5]; {HINT}"):
        lw.correctness(probs, [0, 1, 2, 0, 1, 2], n_classes=2)
    # dependability's scenario_performance (before: "... (the score columns), got [7]")
    with _raises(
        f"labels must be classes in [0, 3) (the 3 score columns), got [7] at positions [4]; {HINT}"
    ):
        scenario_performance([0, 1, 2, 0, 7, 2], probs, ["a"] * 6)
    # RankingCampaign.record (before: no rows)
    preds = np.array([[0, 1, 2, 0, 1, 2] * 5, [0, 1, 1, 0, 2, 2] * 5])
    camp = lw.RankingCampaign(preds, method="srs", rng=0)
    rows = camp.propose(4)
    with _raises(
        f"labels must be classes in [0, 3) (n_classes=3), got [5] at rows [{rows[2]}]; pass "
        "n_classes= (CLI: --classes FILE) if a class is never predicted"
    ):
        camp.record(rows, [0, 1, 5, 2])
    # the CLI's selection scores (before: "--labels: labels must be ... for rows [..]")
    _, x, p = classifier_pile(np.random.default_rng(0), 60, 3, 6)
    np.save(tmp_path / "a.npy", x)
    np.save(tmp_path / "p.npy", p)
    arrays = ["--activations", tmp_path / "a.npy", "--probs", tmp_path / "p.npy"]
    sel_dir = tmp_path / "sel"
    code, _, err = run_cli(
        ["select", "--method", "srs", "--budget", 4, *arrays, "--seed", 1, "--out", sel_dir],
        capsys,
    )
    assert code == 0, err
    ws, sel = Workspace.open(sel_dir)
    got = np.array([0, 2, 1, 2])
    with _raises(
        f"--labels must be classes in [0, 2) (--n-classes 2), got [2, 2] at rows "
        f"{sel.indices[[1, 3]].tolist()}; {HINT}"
    ):
        selection_scores(ws, sel, "label", got, n_classes=2)
    with _raises(
        f"--labels must be classes in [0, 3) (the 3 columns of the --probs recorded in "
        f"selection.json), got [3] at rows [{sel.indices[0]}]; {HINT}"
    ):
        selection_scores(ws, sel, "label", np.array([3, 0, 1, 2]))
    # the CLI's campaign scores (before: "--labels: labels must be ... for rows [..]")
    from labelwise.cli.campaign import CampaignState, _scores

    camp_dir = tmp_path / "camp"
    assert run_cli(["campaign", camp_dir, *arrays, "--seed", 0], capsys)[0] == 0
    st = CampaignState.open(camp_dir)
    args = argparse.Namespace(predictions=None, n_classes=None)
    with _raises(
        f"--labels must be classes in [0, 3) (the 3 columns of --probs), got [-1] at rows [7]; "
        f"{HINT}"
    ):
        _scores(args, st, "label", np.array([5, 7]), np.array([1, -1]))


def test_rank_models_gives_the_one_message() -> None:
    # the seventh copy (estimation.ranking._check_labels) said "labels must be classes in
    # [0, 3), got [3] at positions [1]" with no source of the range and no hint
    probs = np.stack([np.eye(3)[[0, 1, 2, 0]], np.eye(3)[[0, 1, 1, 0]]])
    with _raises(
        "labels must be classes in [0, 3) (the 3 columns of the predicted probabilities), got "
        f"[3] at positions [1]; {HINT}"
    ):
        lw.rank_models(probs, [0, 3, 2, 0])
    with _raises(
        "labels must be classes >= 0, got [-2] at positions [2]; are the labels of another model?"
    ):
        lw.rank_models(np.array([[0, 1, 2, 0], [0, 1, 1, 0]]), [0, 1, -2, 0])


def test_ranking_campaign_record_of_labels_as_text_says_how_to_make_numbers() -> None:
    # labels read from a CSV as strings said only "labels must be integer class labels, got
    # dtype <U1" in RankingCampaign.record; now as lw.correctness does: values and how
    preds = np.array([[0, 1, 2, 0, 1, 2] * 5, [0, 1, 1, 0, 2, 2] * 5])
    camp = lw.RankingCampaign(preds, method="srs", rng=0)
    rows = camp.propose(3)
    with pytest.raises(
        lw.LabelwiseError, match=r"got dtype <U1 \(text: '0', '1', '2', \.\.\.\); numbers"
    ):
        camp.record(rows, np.array(["0", "1", "2"]))
    assert camp.n_labelled == 0
