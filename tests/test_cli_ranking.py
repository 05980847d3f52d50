"""End to end: several real models on digits -> select (SDS, DDG, RDG) -> label -> rank."""

from __future__ import annotations

import csv
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from labelwise.cli import main


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier

    x, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    train, pile = order[:600], order[600:]
    models = [
        LogisticRegression(C=1e-4, max_iter=300),
        LogisticRegression(C=1e-3, max_iter=300),
        LogisticRegression(C=1.0, max_iter=2000),
        KNeighborsClassifier(1),
        KNeighborsClassifier(25),
        GaussianNB(),
    ]
    probs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn convergence chatter is not under test
        for m in models:
            probs.append(m.fit(x[train], y[train]).predict_proba(x[pile]))
    p = np.asarray(probs, dtype=np.float32)
    d = tmp_path_factory.mktemp("zoo")
    np.save(d / "probs.npy", p)
    np.save(d / "preds.npy", p.argmax(axis=2))
    truth = (p.argmax(axis=2) == y[pile]).mean(axis=1)
    return {"dir": d, "labels": y[pile], "truth": truth, "n": len(pile)}


def _label(sel_dir: Path, labels: np.ndarray) -> Path:
    with open(sel_dir / "to_label.csv") as fh:
        rows = [int(r["row"]) for r in csv.DictReader(fh)]
    out = sel_dir / "labels.csv"
    with open(out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["row", "label"])
        w.writerows([r, int(labels[r])] for r in rows)
    return out


@pytest.mark.parametrize(
    ("method", "source"), [("sds", "preds"), ("ddg", "probs"), ("rdg", "probs")]
)
def test_select_label_rank(
    zoo: dict, tmp_path: Path, capsys: pytest.CaptureFixture, method: str, source: str
) -> None:
    assert len(set(np.round(zoo["truth"], 3))) == 6 and np.ptp(zoo["truth"]) > 0.1
    d = tmp_path / method
    assert (
        main(
            [
                "select",
                "--method",
                method,
                "--budget",
                "150",
                "--seed",
                "2",
                "--predictions",
                str(zoo["dir"] / f"{source}.npy"),
                "--out",
                str(d),
            ]
        )
        == 0
    )
    labels = _label(d, zoo["labels"])
    capsys.readouterr()
    names = "lr-tiny,lr-small,lr,1nn,25nn,nb"
    assert main(["rank", str(d), "--labels", str(labels), "--names", names]) == 0
    table = capsys.readouterr().out
    doc = json.loads((d / "ranking.json").read_text())["ranking"]
    acc = np.asarray(doc["accuracy"])
    idx = json.loads((d / "selection.json").read_text())["selection"]["indices"]
    preds = np.load(zoo["dir"] / "preds.npy")
    np.testing.assert_allclose(acc, (preds[:, idx] == zoo["labels"][idx]).mean(axis=1))
    assert "P(better than next)" in table and "lr-tiny" in table
    # 'estimate' asked for --predictions, which a ranking selection cannot give: it now
    # names the command that uses these labels
    assert main(["estimate", str(d), "--labels", str(labels)]) == 2
    err = capsys.readouterr().err
    assert "selection ranks models" in err and f"'labelwise rank {d} --labels {labels}'" in err
    # the best true model is ranked in the top two from 150 labels
    assert doc["rank"][int(np.argmax(zoo["truth"]))] <= 2
    assert all(0.0 <= p <= 1.0 for p in doc["prob_better"])


def test_sds_extend_and_ranking_errors(
    zoo: dict, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    d = tmp_path / "sds"
    preds = str(zoo["dir"] / "preds.npy")
    assert (
        main(
            [
                "select",
                "--method",
                "sds",
                "--budget",
                "40",
                "--seed",
                "0",
                "--predictions",
                preds,
                "--out",
                str(d),
            ]
        )
        == 0
    )
    assert main(["select", "--extend", str(d), "--budget", "10"]) == 0
    assert len(json.loads((d / "selection.json").read_text())["selection"]["indices"]) == 50
    labels = _label(d, zoo["labels"])
    capsys.readouterr()
    assert main(["rank", str(d), "--labels", str(labels), "--names", "a,b"]) == 2
    assert "--names must name all 6 models" in capsys.readouterr().err
    # ranking again after an extension kept no names (M1, M2, ...): the last --names stay
    names = "lr-tiny,lr-small,lr,1nn,25nn,nb"
    assert main(["rank", str(d), "--labels", str(labels), "--names", names]) == 0
    assert main(["select", "--extend", str(d), "--budget", "5"]) == 0
    labels = _label(d, zoo["labels"])
    capsys.readouterr()
    assert main(["rank", str(d), "--labels", str(labels)]) == 0
    assert "lr-tiny" in capsys.readouterr().out
    doc = json.loads((d / "ranking.json").read_text())["ranking"]
    assert doc["model_names"] == names.split(",") and doc["n_labelled"] == 55
    one = tmp_path / "one.npy"
    np.save(one, np.load(zoo["dir"] / "preds.npy")[:1])
    assert (
        main(
            [
                "select",
                "--method",
                "sds",
                "--budget",
                "5",
                "--predictions",
                str(one),
                "--out",
                str(tmp_path / "x"),
            ]
        )
        == 2
    )
    assert "model" in capsys.readouterr().err
    # an SRS selection may hold one model (an accuracy); ranking it is an error, not "1 models
    # ranked"
    srs = tmp_path / "srs1"
    assert (
        main(
            [
                "select",
                "--method",
                "srs",
                "--budget",
                "5",
                "--seed",
                "0",
                "--predictions",
                str(one),
                "--out",
                str(srs),
            ]
        )
        == 0
    )
    one_labels = _label(srs, zoo["labels"])
    capsys.readouterr()
    assert main(["rank", str(srs), "--labels", str(one_labels)]) == 2
    assert "at least 2 models" in capsys.readouterr().err
    assert (
        main(
            [
                "select",
                "--method",
                "ddg",
                "--budget",
                "5",
                "--predictions",
                preds,
                "--out",
                str(tmp_path / "y"),
            ]
        )
        == 2
    )
    assert "probabilities" in capsys.readouterr().err
    rows = json.loads((d / "selection.json").read_text())["selection"]["indices"]
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "row,label\n" + "".join(f"{r},{-1 if i == 0 else 1}\n" for i, r in enumerate(rows))
    )
    assert main(["rank", str(d), "--labels", str(bad)]) == 2
    assert "labels" in capsys.readouterr().err


def test_every_rank_table_has_prob_best(
    zoo: dict, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    d = tmp_path / "srs"
    args = ["select", "--method", "srs", "--budget", "120", "--seed", "1"]
    assert main([*args, "--predictions", str(zoo["dir"] / "preds.npy"), "--out", str(d)]) == 0
    labels = _label(d, zoo["labels"])
    capsys.readouterr()
    assert main(["rank", str(d), "--labels", str(labels)]) == 0
    table = capsys.readouterr().out
    assert "P(best)" in table and "rank set" not in table
    doc = json.loads((d / "ranking.json").read_text())["ranking"]
    assert sum(doc["prob_best"]) == pytest.approx(1.0)
    # the printed P(best) of the first-ranked model is the recorded one
    first = doc["order"][0]
    assert f"{doc['prob_best'][first]:.3f}" in table.splitlines()[3]


def test_cppi_select_label_rank(zoo: dict, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    d = tmp_path / "cppi"
    preds = str(zoo["dir"] / "preds.npy")
    assert (
        main(
            [
                "select",
                "--method",
                "cppi",
                "--budget",
                "100",
                "--uniform-share",
                "0.3",
                "--seed",
                "4",
                "--predictions",
                preds,
                "--out",
                str(d),
            ]
        )
        == 0
    )
    assert main(["select", "--extend", str(d), "--budget", "50"]) == 0
    sel = json.loads((d / "selection.json").read_text())["selection"]
    assert len(set(sel["indices"])) == 150 and len(sel["diagnostics"]["weights"]) == 150
    assert sel["params"] == {"uniform_share": 0.3}
    labels = _label(d, zoo["labels"])
    capsys.readouterr()
    names = "lr-tiny,lr-small,lr,1nn,25nn,nb"
    assert main(["rank", str(d), "--labels", str(labels), "--names", names]) == 0
    table = capsys.readouterr().out
    assert "consensus-PPI" in table and "P(best)" in table and "90% rank set" in table
    doc = json.loads((d / "ranking.json").read_text())["ranking"]
    assert doc["method"] == "consensus-ppi" and sum(doc["prob_best"]) == pytest.approx(1.0)
    acc, truth = np.asarray(doc["accuracy"]), zoo["truth"]
    # a pile estimate, not the labelled-row accuracy: close to the truth for every model
    assert np.abs(acc - truth).max() < 0.06
    lo, hi = np.asarray(doc["rank_low"]), np.asarray(doc["rank_high"])
    true_rank = np.argsort(np.argsort(-truth)) + 1
    assert np.all((lo <= true_rank) & (true_rank <= hi))
    assert doc["rank"][int(np.argmax(truth))] == 1
    # the same selection gives the same ranking (seeded posterior draws)
    assert main(["rank", str(d), "--labels", str(labels), "--names", names]) == 0
    assert capsys.readouterr().out == table
    assert main(["rank", str(d), "--labels", str(labels), "--bootstrap", "10"]) == 2
    assert "--bootstrap must be >= 100" in capsys.readouterr().err
    assert main(["rank", str(d), "--labels", str(labels), "--rank-level", "1.5"]) == 2
    assert "labelwise: error: --rank-level must be in (0, 1)" in capsys.readouterr().err
    # a selection whose weights were tampered with is refused, not silently mis-weighted
    doc_sel = json.loads((d / "selection.json").read_text())
    doc_sel["selection"]["diagnostics"]["weights"] = [1.0]
    (d / "selection.json").write_text(json.dumps(doc_sel))
    assert main(["rank", str(d), "--labels", str(labels)]) == 2
    assert "proposal weight" in capsys.readouterr().err


def test_cppi_extend_with_labels_is_the_campaigns_next_round(
    zoo: dict, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """`select --extend` of a cppi selection chose its rows from the vote alone even when the
    rows so far were labelled; with --labels it is the ranking campaign's next active round:
    the rows (and the ranking) a RankingCampaign recording those labels gives."""
    import labelwise as lw

    d = tmp_path / "cppi"
    preds_path = zoo["dir"] / "preds.npy"
    preds, y = np.load(preds_path), zoo["labels"]
    select = ["select", "--method", "cppi", "--budget", "30", "--seed", "7"]
    assert main([*select, "--predictions", str(preds_path), "--out", str(d)]) == 0
    labels = _label(d, y)
    capsys.readouterr()
    assert main(["select", "--extend", str(d), "--budget", "20", "--labels", str(labels)]) == 0
    assert "note: chosen without labels" not in capsys.readouterr().out
    sel = json.loads((d / "selection.json").read_text())["selection"]
    camp = lw.RankingCampaign(preds, rng=7)
    first = camp.propose(30)
    assert sel["indices"][:30] == first.tolist()
    camp.record(first, y[first])
    second = camp.propose(20)
    assert sel["indices"][30:] == second.tolist()
    # the label-free extension of the same selection goes elsewhere, and says so
    free = tmp_path / "free"
    assert main([*select, "--predictions", str(preds_path), "--out", str(free)]) == 0
    capsys.readouterr()
    assert main(["select", "--extend", str(free), "--budget", "20"]) == 0
    assert "note: chosen without labels" in capsys.readouterr().out
    free_rows = json.loads((free / "selection.json").read_text())["selection"]["indices"]
    assert free_rows[30:] != second.tolist()
    # ranked from the CLI's files: the campaign's ranking
    camp.record(second, y[second])
    labels = _label(d, y)
    assert main(["rank", str(d), "--labels", str(labels)]) == 0
    doc = json.loads((d / "ranking.json").read_text())["ranking"]
    np.testing.assert_allclose(doc["accuracy"], camp.ranking().accuracy)
    # --labels: only with --extend, only for a method that learns, and every selected row
    capsys.readouterr()
    assert (
        main(
            [
                *select,
                "--predictions",
                str(preds_path),
                "--out",
                str(tmp_path / "x"),
                "--labels",
                str(labels),
            ]
        )
        == 2
    )
    assert "--labels applies to --extend DIR only" in capsys.readouterr().err
    srs = tmp_path / "srs"
    assert (
        main(
            [
                "select",
                "--method",
                "srs",
                "--budget",
                "5",
                "--seed",
                "0",
                "--predictions",
                str(preds_path),
                "--out",
                str(srs),
            ]
        )
        == 0
    )
    assert (
        main(["select", "--extend", str(srs), "--budget", "5", "--labels", str(_label(srs, y))])
        == 2
    )
    assert "do not depend on labels" in capsys.readouterr().err
    part = tmp_path / "part.csv"  # the first round's labels only: 20 selected rows have none
    part.write_text("row,label\n" + "".join(f"{r},{y[r]}\n" for r in first.tolist()))
    assert main(["select", "--extend", str(d), "--budget", "5", "--labels", str(part)]) == 2
    assert "20 selected rows have no label" in capsys.readouterr().err
    assert len(json.loads((d / "selection.json").read_text())["selection"]["indices"]) == 50


def test_one_models_capture_as_predictions_says_how_to_stack_models(
    zoo: dict, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A user with one capture per model gave a capture's predictions.npy (N,) or its
    probabilities.npy (N, C) to --predictions: select said '--predictions must be (models,
    inputs) ...' or 'predictions must be integer class labels when 2-D', rank 'must be (models,
    N) ...', and nothing said how to make (M, N) from several captures. Each now says it holds
    one model's outputs and how to stack the models' files."""
    d = zoo["dir"]
    np.save(tmp_path / "one_preds.npy", np.load(d / "preds.npy")[0])
    np.save(tmp_path / "one_probs.npy", np.load(d / "probs.npy")[0])
    argv = ["select", "--method", "sds", "--budget", "30", "--predictions",
            str(d / "preds.npy"), "--out", str(tmp_path / "sel"), "--seed", "0"]  # fmt: skip
    assert main(argv) == 0
    labels = _label(tmp_path / "sel", zoo["labels"])
    for one in ("one_preds.npy", "one_probs.npy"):
        for argv in (
            ["select", "--method", "sds", "--budget", "30", "--out", str(tmp_path / "s2")],
            ["rank", str(tmp_path / "sel"), "--labels", str(labels)],
        ):
            capsys.readouterr()
            assert main([*argv, "--predictions", str(tmp_path / one)]) == 2
            err = capsys.readouterr().err
            assert "one model's" in err and "numpy.stack" in err, err
            assert "Traceback" not in err


def test_transposed_predictions_are_named_as_transposed(
    zoo: dict, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Predictions saved as (inputs, models), as a pandas table of one column per model
    gives them: 'select --method sds --budget 20' said 'budget must be in [1, 6] (the
    population has 6 rows), got 20' (a pile of 6 rows?), and with --budget 3 it selected 3
    of the 6 models. Now both select and rank say it is transposed and how to swap it."""
    d = zoo["dir"]
    preds = np.load(d / "preds.npy")
    np.save(tmp_path / "t.npy", preds.T)
    np.save(tmp_path / "t3.npy", np.swapaxes(np.load(d / "probs.npy"), 0, 1))
    argv = ["select", "--method", "sds", "--budget", "30", "--predictions",
            str(d / "preds.npy"), "--out", str(tmp_path / "sel"), "--seed", "0"]  # fmt: skip
    assert main(argv) == 0
    labels = _label(tmp_path / "sel", zoo["labels"])
    m, n = preds.shape
    for name, budget in (("t.npy", 20), ("t.npy", 3), ("t3.npy", 3)):
        for argv in (
            ["select", "--method", "sds", "--budget", str(budget), "--out", str(tmp_path / "s")],
            ["rank", str(tmp_path / "sel"), "--labels", str(labels)],
        ):
            capsys.readouterr()
            assert main([*argv, "--predictions", str(tmp_path / name)]) == 2
            err = capsys.readouterr().err
            assert (
                f"{n} models of {m} inputs each, more models than inputs; is it transposed?" in err
            )
            assert f"np.swapaxes(np.load('{tmp_path / name}'), 0, 1)" in err, err
            assert not (tmp_path / "s").exists()


def test_rank_of_a_cppi_selection_refuses_other_predictions(
    zoo: dict, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """'rank DIR --predictions OTHER' on a cppi selection took predictions of the same shape
    but other rows (the pile reordered) without a word: the labels were matched to other
    inputs and the models' accuracies came out 0.02-0.04 with P(best) spread over all three
    (a 200-row image pile, true 0.735-0.975). 'select --extend' already refused them by the
    predictions' fingerprint; the campaign now checks it wherever it adopts a selection."""
    d = zoo["dir"]
    argv = ["select", "--method", "cppi", "--budget", "30", "--predictions",
            str(d / "probs.npy"), "--out", str(tmp_path / "sel"), "--seed", "0"]  # fmt: skip
    assert main(argv) == 0
    labels = _label(tmp_path / "sel", zoo["labels"])
    np.save(tmp_path / "reordered.npy", np.load(d / "probs.npy")[:, ::-1])
    capsys.readouterr()
    rank = ["rank", str(tmp_path / "sel"), "--labels", str(labels), "--bootstrap", "200"]
    assert main([*rank, "--predictions", str(tmp_path / "reordered.npy")]) == 2
    err = capsys.readouterr().err
    assert "fingerprint differs" in err and "Traceback" not in err
    assert main([*rank, "--predictions", str(d / "probs.npy")]) == 0  # the same file: fine


@pytest.mark.parametrize(
    ("method", "source"), [("sds", "preds"), ("ddg", "probs"), ("rdg", "probs")]
)
def test_rank_of_a_ranking_selection_refuses_reordered_predictions(
    zoo: dict, tmp_path: Path, capsys: pytest.CaptureFixture, method: str, source: str
) -> None:
    """'rank DIR --predictions OTHER' on an sds/ddg/rdg selection took the pile's rows
    reordered without a word (only cppi checked): the labels were matched to other rows and
    the accuracies came out near chance. The predictions must now predict the recorded
    classes; the recorded file, or the argmax of recorded probabilities, still passes."""
    d = zoo["dir"]
    sel = tmp_path / "sel"
    argv = ["select", "--method", method, "--budget", "60", "--seed", "1", "--predictions",
            str(d / f"{source}.npy"), "--out", str(sel)]  # fmt: skip
    assert main(argv) == 0
    labels = _label(sel, zoo["labels"])
    np.save(tmp_path / "reordered.npy", np.load(d / f"{source}.npy")[:, ::-1])
    capsys.readouterr()
    rank = ["rank", str(sel), "--labels", str(labels), "--bootstrap", "200"]
    assert main([*rank, "--predictions", str(tmp_path / "reordered.npy")]) == 2
    err = capsys.readouterr().err
    assert "not the predictions the" in err and "Traceback" not in err
    assert not (sel / "ranking.json").exists()
    assert main([*rank, "--predictions", str(d / f"{source}.npy")]) == 0  # the same file
    assert main([*rank, "--predictions", str(d / "preds.npy")]) == 0  # the same classes
    acc = np.asarray(json.loads((sel / "ranking.json").read_text())["ranking"]["accuracy"])
    idx = json.loads((sel / "selection.json").read_text())["selection"]["indices"]
    preds = np.load(d / "preds.npy")
    np.testing.assert_allclose(acc, (preds[:, idx] == zoo["labels"][idx]).mean(axis=1))


def test_rank_notes_labels_of_classes_no_model_predicts(
    zoo: dict, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Labels numbered from 1 (digit 9 labelled 10) given to 'rank' with class-index
    predictions (no class count known) were taken as they were: every row labelled 10 counted
    as wrong for every model, without a word. A note now names the classes no model
    predicts; labels numbered like the predictions give no note."""
    sel = tmp_path / "sel"
    argv = ["select", "--method", "sds", "--budget", "150", "--seed", "2", "--predictions",
            str(zoo["dir"] / "preds.npy"), "--out", str(sel)]  # fmt: skip
    assert main(argv) == 0
    good = _label(sel, zoo["labels"])
    capsys.readouterr()
    assert main(["rank", str(sel), "--labels", str(good), "--bootstrap", "200"]) == 0
    assert "predicted by no model" not in capsys.readouterr().err
    shifted = _label(sel, zoo["labels"] + 1)
    assert main(["rank", str(sel), "--labels", str(shifted), "--bootstrap", "200"]) == 0
    err = capsys.readouterr().err
    assert "note: --labels: classes [10]" in err and "predicted by no model" in err


def test_rank_refuses_a_label_past_the_known_classes(
    zoo: dict, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """With the 10 class names given (--classes), 'rank' took a label 10 without a word (every
    model wrong on that row); a cppi selection of (M, N, C) probabilities said "labels must be
    classes in [0, 10) (n_classes=10), got [10] at rows [...]; pass n_classes= ...", the
    Python API's words, no file or line, and so did 'select --extend DIR --labels'. All
    now name the file and line."""
    d = zoo["dir"]
    (tmp_path / "classes.txt").write_text("".join(f"digit{k}\n" for k in range(10)))
    for method, preds, extra in (
        ("sds", "preds.npy", ["--classes", str(tmp_path / "classes.txt")]),
        ("cppi", "probs.npy", []),
    ):
        out = tmp_path / method
        argv = ["select", "--method", method, "--budget", "20", "--seed", "0",
                "--predictions", str(d / preds), "--out", str(out), *extra]  # fmt: skip
        assert main(argv) == 0
        labels = _label(out, zoo["labels"])
        lines = labels.read_text().splitlines()
        lines[3] = lines[3].rsplit(",", 1)[0] + ",10"
        labels.write_text("\n".join(lines) + "\n")
        for argv in (
            ["rank", str(out), "--labels", str(labels)],
            ["select", "--extend", str(out), "--budget", "5", "--labels", str(labels)],
        ):
            if argv[0] == "select" and method == "sds":
                continue  # an sds selection's next rows take no labels
            capsys.readouterr()
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert "labels.csv line 4: label '10' is not a class: the model has 10 classes" in err
