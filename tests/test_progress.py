"""Progress bars show on a terminal and stay out of logs."""

from __future__ import annotations

import io

import pytest

from labelwise._progress import progress_bar


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bar_draws_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LABELWISE_NO_PROGRESS", raising=False)
    tty = _Tty()
    monkeypatch.setattr("sys.stderr", tty)
    with progress_bar(3, desc="work") as bar:
        bar.update(3)
    assert "work:" in tty.getvalue() and "/3" in tty.getvalue()  # the bar was drawn


@pytest.mark.parametrize(("env", "enabled"), [("1", True), (None, False)])
def test_bar_can_be_switched_off(
    monkeypatch: pytest.MonkeyPatch, env: str | None, enabled: bool
) -> None:
    if env is None:
        monkeypatch.delenv("LABELWISE_NO_PROGRESS", raising=False)
    else:
        monkeypatch.setenv("LABELWISE_NO_PROGRESS", env)
    tty = _Tty()
    monkeypatch.setattr("sys.stderr", tty)
    with progress_bar(3, desc="work", enabled=enabled) as bar:
        bar.update(3)
    assert tty.getvalue() == ""


def test_bar_is_silent_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LABELWISE_NO_PROGRESS", raising=False)
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    with progress_bar(3, desc="work") as bar:
        bar.update(3)
    assert pipe.getvalue() == ""
