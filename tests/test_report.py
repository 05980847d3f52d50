"""``labelwise report``: one self-contained HTML page whose numbers are ``estimate --json``'s."""

from __future__ import annotations

import csv
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import labelwise as lw
from labelwise.report import build_report, report_data
from labelwise.workspace import Workspace
from synthetic import CHROMIUM, CHROMIUM_ARGS, classifier_pile, run_cli

N, C = 500, 3


@pytest.fixture()
def pile(tmp_path: Path) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    y, x, p = classifier_pile(rng, N, C, 6)
    np.save(tmp_path / "acts.npy", x.astype(np.float32))
    np.save(tmp_path / "probs.npy", p.astype(np.float32))
    return {"dir": tmp_path, "y": y, "probs": p.astype(np.float32)}


def _write_labels(path: Path, rows: list[int], y: np.ndarray) -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["row", "label"])
        w.writerows([r, int(y[r])] for r in rows)
    return path


def _to_label(d: Path) -> list[int]:
    with open(d / "to_label.csv", newline="") as fh:
        return [int(r["row"]) for r in csv.DictReader(fh)]


def _selection(pile: dict[str, Any], capsys: pytest.CaptureFixture[str], method: str) -> Path:
    d = pile["dir"] / f"sel-{method}"
    code, _, err = run_cli(
        ["select", "--method", method, "--budget", "40", "--activations", pile["dir"] / "acts.npy",
         "--probs", pile["dir"] / "probs.npy", "--seed", "5", "--out", d],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    _write_labels(d / "labels.csv", _to_label(d), pile["y"])
    return d


def _campaign(pile: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> tuple[Path, dict]:
    d = pile["dir"] / "camp"
    code, _, err = run_cli(
        ["campaign", d, "--activations", pile["dir"] / "acts.npy", "--probs",
         pile["dir"] / "probs.npy", "--seed", "2"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    for _ in range(2):
        assert run_cli(["next", d, "--batch", "25"], capsys)[0] == 0
        labels = _write_labels(pile["dir"] / "labels.csv", _to_label(d), pile["y"])
        code, out, err = run_cli(
            ["estimate", d, "--labels", labels, "--json", "--until-halfwidth", "0.01"], capsys
        )
        assert code == 0, err
    return d, json.loads(out)


class _Page(HTMLParser):
    """The numbers (data-key -> data-value), section ids, URLs and the embedded estimate."""

    def __init__(self) -> None:
        super().__init__()
        self.numbers: dict[str, str] = {}
        self.shown: dict[str, str] = {}
        self.sections: list[str] = []
        self.urls: list[str] = []
        self.images: list[str] = []
        self._key: str | None = None
        self._json = False
        self.estimate_json = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "section" and a.get("id"):
            self.sections.append(str(a["id"]))
        for name in ("src", "href", "action", "poster"):
            if a.get(name):
                self.urls.append(str(a[name]))
        if tag == "img":
            self.images.append(str(a.get("src")))
        if tag == "span" and a.get("data-key"):
            self.numbers[str(a["data-key"])] = str(a["data-value"])
            self._key = str(a["data-key"])
        if tag == "script" and a.get("id") == "estimate-json":
            self._json = True

    def handle_endtag(self, tag: str) -> None:
        self._key = None
        self._json = False

    def handle_data(self, data: str) -> None:
        if self._key is not None:
            self.shown[self._key] = data
        if self._json:
            self.estimate_json += data


def _parse(page: str) -> _Page:
    p = _Page()
    p.feed(page)
    return p


def _check_numbers(page: str, est: dict[str, Any]) -> _Page:
    p = _parse(page)
    for key in ("value", "ci_low", "ci_high", "std_error"):
        assert float(p.numbers[key]) == est[key], key
        assert p.shown[key] == f"{est[key]:.4f}", key
    assert int(p.numbers["n_labelled"]) == est["n_labelled"]
    assert json.loads(p.estimate_json.replace("<\\/", "</")) == {
        k: v for k, v in est.items() if k not in ("campaign", "anytime", "regression")
    }
    return p


try:
    import matplotlib  # noqa: F401

    HAVE_MPL = True
except ImportError:  # the base install: the report says why it has no plots
    HAVE_MPL = False


def _no_network(page: str, p: _Page) -> None:
    if HAVE_MPL:
        assert p.urls, "the page has images"
    else:
        assert not p.urls and "Plots need matplotlib" in page
    assert all(u.startswith("data:image/png;base64,") for u in p.urls), p.urls
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    assert "http://" not in page and "https://" not in page
    assert "@import" not in page and "url(" not in page


def test_selection_report_numbers_equal_estimate_json(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    d = _selection(pile, capsys, "ces")
    code, out, err = run_cli(["estimate", d, "--labels", d / "labels.csv", "--json"], capsys)
    assert code == 0, err
    est = json.loads(out)
    code, out, err = run_cli(["report", d], capsys)
    assert code == 0, err
    assert f"wrote {d / 'report.html'}" in out
    page = (d / "report.html").read_text(encoding="utf-8")
    p = _check_numbers(page, est)
    _no_network(page, p)
    assert p.sections == ["estimate", "labels", "history", "per-class", "method", "sources"]
    assert len(p.images) == (2 if HAVE_MPL else 0)  # the estimate against labels, per-class
    sha = lw.io.file_digest(pile["dir"] / "probs.npy")
    assert sha in page and lw.io.file_digest(d / "labels.csv") in page
    assert f"labelwise {lw.__version__}, generated" in page


def test_css_selection_history_uses_selection_order(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    d = _selection(pile, capsys, "css")
    data = report_data(d)
    _ws, sel = Workspace.open(d)
    y = pile["y"]
    correct = (pile["probs"][sel.indices].argmax(axis=1) == y[sel.indices]).astype(float)
    assert data.history[-1][0] == 40
    assert data.history[-1][1] == pytest.approx(lw.estimate(sel, correct).value)
    k, value = data.history[len(data.history) // 2][:2]
    first = lw.Selection(
        indices=sel.indices[:k],
        method="css",
        population_size=N,
        strata=None if sel.strata is None else sel.strata[:k],
        stratum_sizes=sel.stratum_sizes,
    )
    assert value == pytest.approx(lw.estimate(first, correct[:k]).value)
    # per-class accuracy with Wilson intervals, from the labelled rows
    for row in data.per_class:
        m = y[sel.indices] == row["class"]
        assert row["n"] == int(m.sum()) and row["correct"] == int(correct[m].sum())
        assert 0 <= row["ci_low"] <= row["accuracy"] <= row["ci_high"] <= 1


def test_campaign_report_numbers_equal_estimate_json(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    d, est = _campaign(pile, capsys)
    (d / "classes.json").write_text(json.dumps(["ant", "bee", "cow"]))
    code, _out, err = run_cli(["report", d, "--out", pile["dir"] / "r.html"], capsys)
    assert code == 0, err
    page = (pile["dir"] / "r.html").read_text(encoding="utf-8")
    p = _check_numbers(page, est)
    _no_network(page, p)
    assert float(p.numbers["effective_sample_size"]) == est["effective_sample_size"]
    assert float(p.numbers["anytime_ci_low"]) == est["anytime"]["ci_low"]
    assert float(p.numbers["anytime_ci_high"]) == est["anytime"]["ci_high"]
    assert p.sections == ["estimate", "labels", "history", "per-class", "method", "sources"]
    assert ">bee</td>" in page
    data = report_data(d)
    assert len(data.labelled) == 50 and page.count("<td>yes</td>") + page.count("<td>no</td>") == 50
    for e in data.labelled:
        r = e["row"]
        assert e["label"] == ["ant", "bee", "cow"][pile["y"][r]]
        assert e["correct"] == (int(pile["probs"][r].argmax()) == pile["y"][r])
    assert data.history[-1][1:] == (est["value"], est["ci_low"], est["ci_high"])
    assert data.history[-1][0] == 50
    # the interval narrows: the last half-width is below the first's
    first, last = data.history[0], data.history[-1]
    assert last[3] - last[2] < first[3] - first[2]


def test_worth_is_explained_as_the_number_it_is(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """The report explained 'worth about 91 labels drawn at random' as 'n x Var_SRS /
    Var_design', the definition the campaign dropped (it gave 'worth 144' on a pile of 123):
    the number is srs_worth's, the random-sample size whose own interval is as narrow as the
    one reported. The explanation says that, as 'estimate' and the Estimate docstring do."""
    d, est = _campaign(pile, capsys)
    assert run_cli(["report", d, "--out", pile["dir"] / "r.html"], capsys)[0] == 0
    page = (pile["dir"] / "r.html").read_text(encoding="utf-8")
    labels = page[page.index('<section id="labels">') :]
    labels = labels[: labels.index("</section>")]
    assert f"worth about {est['effective_sample_size']:,.0f} labels drawn at random" in labels
    assert "Var" not in labels
    assert "whose own interval would be as narrow as this one" in labels


def test_ranking_section_shows_p_best(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    d = _selection(pile, capsys, "srs")
    ws, sel = Workspace.open(d)
    y = pile["y"]
    rng = np.random.default_rng(0)
    preds = np.stack([np.where(rng.random(N) < q, y, (y + 1) % C) for q in (0.9, 0.6, 0.75)])
    ranking = lw.rank_models(
        preds, y[sel.indices], rows=sel.indices, model_names=["good", "weak", "mid"],
        prob_best=True, rng=0,
    )  # fmt: skip
    ws.write_ranking({"ranking": ranking.to_dict(), "method": sel.method}, sel, y[sel.indices])
    page = build_report(d)
    p = _parse(page)
    assert p.sections == [
        "estimate", "labels", "history", "per-class", "ranking", "method", "sources",
    ]  # fmt: skip
    assert ranking.prob_best is not None
    section = page[page.index('id="ranking"') : page.index('id="method"')]
    names = re.findall(r"<td>(good|weak|mid)</td>", section)
    assert names == [["good", "weak", "mid"][m] for m in ranking.order]
    for m, name in enumerate(["good", "weak", "mid"]):
        assert re.search(
            rf"<td>{name}</td>.*?<td class=\"n\">{ranking.prob_best[m]:.3f}</td></tr>", section
        )


def test_without_labels_is_a_clear_error(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    d = _selection(pile, capsys, "srs")
    (d / "labels.csv").unlink()
    code, out, err = run_cli(["report", d], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "has no labels to report on" in err and "--labels" in err
    c = pile["dir"] / "c"
    run_cli(["campaign", c, "--activations", pile["dir"] / "acts.npy", "--probs",
          pile["dir"] / "probs.npy", "--seed", "1"], capsys)  # fmt: skip
    code, out, err = run_cli(["report", c], capsys)
    assert code == 2 and "the campaign has no labels recorded yet" in err
    code, out, err = run_cli(["report", pile["dir"] / "nothing"], capsys)
    assert code == 2 and "nothing does not exist" in err
    assert not (d / "report.html").exists()


def _browser() -> Any:
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"{CHROMIUM} is not installed (Debian package chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed")
    return sync_playwright


def test_report_renders_in_headless_chromium(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    sync_playwright = _browser()
    d, est = _campaign(pile, capsys)
    assert run_cli(["report", d], capsys)[0] == 0
    requests: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 1400})
            page.on("request", lambda r: requests.append(r.url))
            page.goto((d / "report.html").resolve().as_uri())
            sections = page.eval_on_selector_all("section", "els => els.map(e => e.id)")
            shown = page.inner_text("#estimate .big")
            widths = page.eval_on_selector_all("img", "els => els.map(e => e.naturalWidth)")
            page.screenshot(path=str(tmp_path / "shot.png"), full_page=True)
        finally:
            browser.close()
    assert sections == ["estimate", "labels", "history", "per-class", "method", "sources"]
    assert shown == f"{est['value']:.4f}"
    assert len(widths) == 2 and all(w > 100 for w in widths)  # the PNGs decoded
    assert all(u.startswith(("file:", "data:")) for u in requests), requests
    from PIL import Image

    pixels = np.asarray(Image.open(tmp_path / "shot.png").convert("L"), dtype=float)
    assert pixels.shape[0] > 1400 and pixels.std() > 20  # not blank


def test_chromium_command_line_screenshot(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The plain ``chromium --headless --screenshot`` path (no Playwright) renders it too."""
    import subprocess

    if not Path(CHROMIUM).is_file() or shutil.which(CHROMIUM) is None:
        pytest.skip(f"{CHROMIUM} is not installed (Debian package chromium)")
    d = _selection(pile, capsys, "srs")
    assert run_cli(["report", d], capsys)[0] == 0
    shot = tmp_path / "cli.png"
    subprocess.run(
        [CHROMIUM, *CHROMIUM_ARGS, f"--screenshot={shot}", "--window-size=1000,1200",
         (d / "report.html").resolve().as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert pixels.shape == (1200, 1000) and pixels.std() > 20


def test_ranking_selection_reports_its_ranking(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    y = pile["y"]
    rng = np.random.default_rng(3)
    preds = np.stack([np.where(rng.random(N) < q, y, (y + 1) % C) for q in (0.9, 0.6)])
    np.save(pile["dir"] / "preds.npy", preds)
    d = pile["dir"] / "sds"
    code, _, err = run_cli(
        ["select", "--method", "sds", "--budget", "30", "--predictions", pile["dir"] / "preds.npy",
         "--seed", "0", "--out", d],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    _write_labels(d / "labels.csv", _to_label(d), y)
    code, _, err = run_cli(["report", d], capsys)
    assert code == 2 and "has no accuracy estimate; run 'labelwise rank" in err
    code, _, err = run_cli(["rank", d, "--labels", d / "labels.csv", "--names", "a,b"], capsys)
    assert code == 0, err
    ranking = json.loads((d / "ranking.json").read_text())["ranking"]
    page = build_report(d)
    p = _parse(page)
    assert p.sections == ["estimate", "labels", "ranking", "method", "sources"]
    assert "ranks models: it has no estimate" in page and not p.numbers
    for m, name in enumerate(["a", "b"]):
        assert re.search(
            rf"<td>{name}</td>.*?<td class=\"n\">{ranking['prob_best'][m]:.3f}</td></tr>", page
        )


def test_a_stale_ranking_is_not_reported(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """After --extend, select --force or other labels, ranking.json spoke of rows the
    selection no longer has (the report showed "on 30 labelled rows" beside 40 labels, or
    another method's ranking); such a ranking is now refused (ranking methods) or left out
    with a note (estimating methods) until 'labelwise rank' runs again."""
    y = pile["y"]
    rng = np.random.default_rng(4)
    preds = np.stack([np.where(rng.random(N) < q, y, (y + 1) % C) for q in (0.9, 0.6)])
    np.save(pile["dir"] / "preds.npy", preds)
    d = pile["dir"] / "sds"
    select = ["select", "--method", "sds", "--budget", "30", "--predictions",
              pile["dir"] / "preds.npy", "--seed", "0", "--out", d]  # fmt: skip
    assert run_cli(select, capsys)[0] == 0
    _write_labels(d / "labels.csv", _to_label(d), y)
    rank = ["rank", d, "--labels", d / "labels.csv"]
    assert run_cli(rank, capsys)[0] == 0
    assert report_data(d).ranking is not None
    assert run_cli(["select", "--extend", d, "--budget", "10"], capsys)[0] == 0
    _write_labels(d / "labels.csv", _to_label(d), y)
    code, _, err = run_cli(["report", d], capsys)
    assert code == 2 and "ranking.json was made from other labelled rows" in err
    assert "run 'labelwise rank" in err and not (d / "report.html").exists()
    assert run_cli(rank, capsys)[0] == 0
    assert report_data(d).ranking["n_labelled"] == 40
    # other labels for the same rows
    rows = _to_label(d)
    _write_labels(d / "labels.csv", rows, np.where(np.arange(N) == rows[0], (y + 1) % C, y))
    assert run_cli(["report", d], capsys)[0] == 2
    # an estimating selection made again over a ranked one: its report leaves the ranking out
    s = pile["dir"] / "srs"
    srs = ["select", "--method", "srs", "--budget", "30", "--predictions",
           pile["dir"] / "preds.npy", "--probs", pile["dir"] / "probs.npy", "--out", s]  # fmt: skip
    assert run_cli([*srs, "--seed", "1"], capsys)[0] == 0
    _write_labels(s / "labels.csv", _to_label(s), y)
    assert run_cli(["rank", s, "--labels", s / "labels.csv"], capsys)[0] == 0
    assert report_data(s).ranking is not None
    assert run_cli([*srs, "--seed", "2", "--force"], capsys)[0] == 0
    _write_labels(s / "labels.csv", _to_label(s), y)
    data = report_data(s)
    assert data.ranking is None and data.estimate is not None
    # --force moved the labelled selection aside with its ranking (see test_cli_rerun.py)
    assert not (s / "ranking.json").exists() and len(list(s.glob("replaced-*/ranking.json"))) == 1
    assert 'id="ranking"' not in build_report(s)


def test_recorded_prefix_is_the_campaign_with_only_those_labels(pile: dict[str, Any]) -> None:
    acts = np.load(pile["dir"] / "acts.npy")
    probs, y = pile["probs"], pile["y"]

    def started() -> lw.Campaign:
        camp = lw.Campaign(acts, probs, rng=7)
        camp.propose(60)
        return camp

    full, part = started(), started()
    rows = full.proposed.copy()
    correct = (probs[rows].argmax(axis=1) == y[rows]).astype(float)
    full.record(rows, correct)
    part.record(rows[:35], correct[:35])
    prefix = full.recorded_prefix(35)
    assert prefix.n_recorded == 35 and full.n_recorded == 60
    assert prefix.estimate() == part.estimate()
    assert full.recorded_prefix(60).estimate() == full.estimate()
    with pytest.raises(lw.exceptions.LabelwiseError, match="n must be"):
        full.recorded_prefix(61)


def test_prefix_is_what_the_campaign_said_before_the_next_batch(pile: dict[str, Any]) -> None:
    """The report's 'estimate against labels' recomputed the first batch's labels with every
    later batch already proposed: the strata a batch of 10 could not fill were estimated at
    the finer level the next batch reached, so after 10 labels the page showed 0.331 where
    'estimate' had said 0.458 (seed 2; 0.544 for 0.583 at seed 7). A prefix now sees only
    the batches proposed up to its last row, also after a save and load."""
    acts = np.load(pile["dir"] / "acts.npy")
    probs, y = pile["probs"], pile["y"]
    for seed in (2, 7):
        camp = lw.Campaign(acts, probs, rng=seed)
        said = []
        for size in (10, 20):
            rows = camp.propose(size)
            camp.record(rows, (probs[rows].argmax(axis=1) == y[rows]).astype(float))
            said.append(camp.estimate())
        part = camp.propose(15)
        camp.record(part[:5], (probs[part[:5]].argmax(axis=1) == y[part[:5]]).astype(float))
        loaded = lw.Campaign.from_dict(camp.to_dict(), activations=acts, probabilities=probs)
        for c in (camp, loaded):
            assert c.recorded_prefix(10).estimate() == said[0]
            assert c.recorded_prefix(30).estimate() == said[1]
            assert c.recorded_prefix(35).estimate() == c.estimate()
    bad = {**camp.to_dict(), "batch_ends": [10, 5, 45]}
    with pytest.raises(lw.exceptions.LabelwiseError, match="batch_ends must be 3 increasing"):
        lw.Campaign.from_dict(bad, activations=acts, probabilities=probs)
    old = {k: v for k, v in camp.to_dict().items() if k != "batch_ends"}  # saved before
    loaded = lw.Campaign.from_dict(old, activations=acts, probabilities=probs)
    assert loaded.recorded_prefix(35).estimate() == camp.estimate()


def test_report_out_never_replaces_what_it_should_not(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    d, _est = _campaign(pile, capsys)
    base = pile["dir"]
    # an older report is replaced
    (base / "old.html").write_text("old")
    assert run_cli(["report", d, "--out", base / "old.html"], capsys)[0] == 0
    assert (base / "old.html").read_text(encoding="utf-8").startswith("<!")
    # any other existing file, a link, and the command's inputs are refused, untouched
    (base / "notes.csv").write_text("keep me")
    code, _out, err = run_cli(["report", d, "--out", base / "notes.csv"], capsys)
    assert code == 2 and "will not overwrite" in err
    assert (base / "notes.csv").read_text() == "keep me"
    (base / "target.html").write_text("target")
    (base / "link.html").symlink_to(base / "target.html")
    code, _out, err = run_cli(["report", d, "--out", base / "link.html"], capsys)
    assert code == 2 and "not a regular file" in err and (base / "link.html").is_symlink()
    assert (base / "target.html").read_text() == "target"
    # the campaign's activations file
    code, _out, err = run_cli(["report", d, "--out", base / "acts.npy"], capsys)
    assert code == 2 and "will not overwrite" in err
    # Label Studio tasks (.json) over another labelwise directory's selection.json: refused
    other = base / "other"
    code, _out, err = run_cli(
        ["select", "--method", "srs", "--budget", "5", "--population-size", "50", "--out", other],
        capsys,
    )
    assert code == 0, err
    before = (other / "selection.json").read_text()
    assert run_cli(["next", d, "--batch", "5"], capsys)[0] == 0
    code, _out, err = run_cli(["export", d, "--out", other / "selection.json"], capsys)
    assert code == 2 and "would overwrite a file of the selection" in err
    assert (other / "selection.json").read_text() == before
    # paths the system refuses: a clear error, no traceback
    code, _out, err = run_cli(["report", d, "--out", base / ("n" * 300 + ".html")], capsys)
    assert code == 2 and "File name too long" in err and "Traceback" not in err
    code, _out, err = run_cli(["report", d, "--out", base / "acts.npy" / "r.html"], capsys)
    assert code == 2 and "is a file, not a directory" in err


def test_report_after_extend_names_the_labels_file_it_read(
    pile: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """'report DIR' after 'select --extend' said '--labels: 5 selected rows have no label' to
    a user who gave no --labels. The 40 labelled rows are the selection before the extension:
    the report is theirs, and says that it is partial and what to label."""
    d = _selection(pile, capsys, "srs")
    assert run_cli(["select", "--extend", d, "--budget", "5"], capsys)[0] == 0
    code, out, err = run_cli(["report", d], capsys)
    assert code == 0, err
    assert "Partial: 40 of the 45 selected rows are labelled" in out
    assert "Label the remaining 5 rows" in out
