"""The NumPy core never imports a deep-learning framework, and every install hint is real.

These tests need no optional dependency: they also run in the base-only venv (make test-base).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import labelwise
from labelwise import _deps
from labelwise.exceptions import MissingDependencyError

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11 (reads pyproject.toml)

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS = ("torch", "captum", "torchattacks")


def _pyproject_extras() -> dict[str, set[str]]:
    table = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = table["optional-dependencies"]
    pattern = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
    out: dict[str, set[str]] = {}
    for extra, reqs in extras.items():
        names = set()
        for req in reqs:
            match = pattern.match(req)
            assert match is not None, req
            names.add(_deps._normalise(match.group(1)))
        out[extra] = names
    return out


def _imported_after(module: str) -> set[str]:
    code = f"import sys, {module}; print(' '.join(m for m in {FRAMEWORKS!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return set(done.stdout.split())


def test_no_module_of_the_package_imports_a_framework_at_import_time() -> None:
    # every module, adapters included, imported in one fresh interpreter: they import their
    # framework inside the functions (one process for all: any module pulling torch shows)
    names = [m.name for m in pkgutil.walk_packages(labelwise.__path__, "labelwise.")]
    assert "labelwise.adapters.attacks" in names and "labelwise.adapters.training" in names
    assert _imported_after(", ".join(names)) == set()


def test_torch_names_are_reexported_lazily() -> None:
    code = (
        "import sys, labelwise.dependability as d, labelwise.dependability.robustness as r; "
        "import labelwise.dependability.interpretation as i; "
        "assert 'labelwise.adapters.attacks' not in sys.modules; "
        "assert r.confidence_loss is d.confidence_loss; r.FGSM(0.1); "
        "assert i.occlusion_heatmaps.__module__ == 'labelwise.adapters.occlusion'; "
        "assert 'torch' not in sys.modules; "
        "assert 'FGSM' in dir(r) and 'occlusion_heatmaps' in dir(d)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        labelwise.dependability.nope  # noqa: B018
    # the one list of lazily re-exported names is the adapter's public API
    from labelwise.adapters import attacks
    from labelwise.dependability import robustness

    assert set(attacks.__all__) == robustness._ADAPTER_NAMES
    assert set(robustness.__all__) == {*attacks.__all__, "ConfidenceLoss", "plot_confidence_loss"}


def test_extras_table_matches_pyproject() -> None:
    try:
        importlib.metadata.distribution("labelwise")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("labelwise is not installed (no metadata)")
    table = {k: set(v) for k, v in _deps.extras_table().items()}
    assert table == _pyproject_extras()


@pytest.mark.parametrize(
    ("module", "extra"),
    [
        ("torch", "torch"),
        ("captum.attr", "dependability"),
        ("sklearn.datasets", None),
        ("mnist1d.data", "study"),
        ("yaml", "dependability"),
        ("matplotlib.pyplot", "plot"),
    ],
)
def test_install_hints_name_existing_extras(module: str, extra: str | None) -> None:
    hint = _deps.install_hint(module)
    match = re.fullmatch(r"pip install 'labelwise\[([a-z0-9-]+)\]'", hint)
    assert match is not None, hint
    extras = _pyproject_extras()
    dist = _deps._normalise(_deps._DISTRIBUTIONS.get(module.split(".")[0], module.split(".")[0]))
    assert dist in extras[match.group(1)]  # the extra really installs the package
    if extra is not None:
        assert match.group(1) == extra


def test_hint_preferences_and_special_cases() -> None:
    assert _deps.install_hint("sklearn", extra="study") == "pip install 'labelwise[study]'"
    # a preferred extra that does not list the package is not used
    assert _deps.install_hint("captum", extra="torch") == "pip install 'labelwise[dependability]'"
    assert _deps.install_hint("torchattacks") == "pip install --no-deps torchattacks"
    assert _deps.install_hint("not_a_package_xyz") == "pip install not-a-package-xyz"


def test_require_imports_or_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _deps.require("json", "the test") is sys.modules["json"]
    monkeypatch.setitem(sys.modules, "captum", None)
    monkeypatch.setitem(sys.modules, "captum.attr", None)
    with pytest.raises(MissingDependencyError) as info:
        _deps.require("captum.attr", "occlusion heatmaps")
    text = str(info.value)
    assert text.startswith("occlusion heatmaps needs captum")
    assert text.endswith("install it with: pip install 'labelwise[dependability]'")
    assert isinstance(info.value, ImportError)


def test_every_hint_written_in_the_source_names_an_existing_extra() -> None:
    extras = _pyproject_extras()
    named = set()
    for path in (ROOT / "src" / "labelwise").rglob("*.py"):
        named |= set(re.findall(r"labelwise\[([A-Za-z0-9_,-]+)\]", path.read_text()))
    assert named, "expected some hints in the source"
    for group in named:
        for extra in group.split(","):
            assert extra in extras, f"a hint names the extra {extra!r}, not in pyproject.toml"


def _cli_descriptions() -> dict[str, str]:
    """Every subcommand's description, e.g. ``{"study quality": "..."}``."""
    from labelwise.cli import build_parser

    out: dict[str, str] = {}

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    out[f"{prefix}{name}"] = sub.description or ""
                    walk(sub, f"{prefix}{name} ")

    walk(build_parser(), "")
    return out


def test_cli_help_hints_come_from_the_extras_table(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _cli_descriptions()
    needing = ("capture", "demo", "dependability", "quality", "study operational", "study quality")
    for name in needing:
        assert "pip install" in texts[name], name
    assert "pip install --no-deps torchattacks" in texts["dependability"]
    extras = _pyproject_extras()
    for text in texts.values():
        for extra in re.findall(r"labelwise\[([A-Za-z0-9_-]+)\]", text):
            assert extra in extras
    # without labelwise's metadata there is no extra to name: the hints fall back to packages
    monkeypatch.setattr(_deps, "extras_table", lambda: {})
    bare = _cli_descriptions()
    assert not any("labelwise[" in text for text in bare.values())
    assert "pip install torch" in bare["capture"]
    assert "pip install mnist1d" in bare["study quality"]


def test_building_the_cli_parser_imports_no_framework() -> None:
    code = (
        "import sys; from labelwise.cli import build_parser; build_parser().format_help(); "
        f"print(' '.join(m for m in {FRAMEWORKS!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert done.stdout.split() == []
