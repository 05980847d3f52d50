"""Every relative link in README.md and docs/*.md points at a file that exists and, for an
``#anchor`` into a Markdown file, at a heading of that file.

Anchors follow GitHub's rule: the heading's text, lower-cased, with every character that is
not a letter, digit, space, '-' or '_' dropped and spaces turned into '-'; a repeated heading
gets '-1', '-2', ... Links inside fenced code blocks are not links.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"!?\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(?P<text>.+?)\s*#*\s*$")


def _outside_code(text: str) -> list[str]:
    """The lines of `text` outside fenced code blocks (``` or ~~~)."""
    lines, fence = [], None
    for line in text.split("\n"):
        stripped = line.lstrip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif fence is not None and stripped.startswith(fence):
            fence = None
        elif fence is None:
            lines.append(line)
    return lines


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a heading's text (without the repeat suffix)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor GitHub gives the headings of the Markdown file `path`."""
    seen: dict[str, int] = {}
    out = set()
    for line in _outside_code(path.read_text(encoding="utf-8")):
        m = HEADING.match(line)
        if not m:
            continue
        base = github_anchor(m["text"])
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(path: Path) -> list[str]:
    """The relative links of `path` whose file or heading does not exist, as 'target: why'."""
    text = "\n".join(_outside_code(path.read_text(encoding="utf-8")))
    problems = []
    for m in LINK.finditer(text):
        target = m["target"]
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: ...
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            problems.append(f"{target}: no file {dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{target}: no heading with anchor #{anchor} in {dest.name}")
    return problems


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        (
            "Ranking with the vote and the labels together: `RankingCampaign` (`cppi`)",
            "ranking-with-the-vote-and-the-labels-together-rankingcampaign-cppi",
        ),
        (
            "What `dependability.json` and `quality.json` hold",
            "what-dependabilityjson-and-qualityjson-hold",
        ),
        (
            "Test-set quality in the model's feature space",
            "test-set-quality-in-the-models-feature-space",
        ),
        ("P(best) on the real zoo: calibration", "pbest-on-the-real-zoo-calibration"),
        ("prob_guard: a floor", "prob_guard-a-floor"),
        ("Zoos of 3-4 close models", "zoos-of-3-4-close-models"),
    ],
)
def test_github_anchor_known_values(heading: str, anchor: str) -> None:
    assert github_anchor(heading) == anchor


def test_the_checker_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Title\n\n## Same\n\n## Same\n", encoding="utf-8")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "[ok](other.md#same-1) [ok](#here) [ok](other.md) [web](https://example.org/x#y)\n"
        "# Here\n[no file](missing.md) [no heading](other.md#same-2) [no self](#there)\n"
        "```\n[in code](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(doc) == [
        f"missing.md: no file {tmp_path / 'missing.md'}",
        "other.md#same-2: no heading with anchor #same-2 in other.md",
        "#there: no heading with anchor #there in doc.md",
    ]


@pytest.mark.parametrize("path", _documents(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(path: Path) -> None:
    assert broken_links(path) == []
