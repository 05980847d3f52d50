"""Rough edges a new user meets through the CLI (cli31): each test is one run that printed a
traceback, named a Python argument instead of a flag, or wrote something a browser cannot
show, end to end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import labelwise

INTERRUPTED = "labelwise: interrupted while starting; nothing was done\n"


@pytest.mark.parametrize("module", ["labelwise", "labelwise.cli"])
def test_ctrl_c_while_python_m_imports_the_package_prints_no_traceback(
    tmp_path: Path, module: str
) -> None:
    """'python -m labelwise.cli' (and 'python -m labelwise') imports the whole package
    (numba, scipy: about 2 s) before its __main__ runs: a Ctrl-C then printed a
    KeyboardInterrupt traceback through runpy. It now ends as the console command does: exit
    130 and one line. -X importtime reports each import as it completes: the first labelwise
    submodule reported means the package's own import is under way."""
    env = {**os.environ, "PYTHONPATH": str(Path(labelwise.__file__).parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", module, "--version"],
        stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.rstrip().endswith(("labelwise._deps", "labelwise.exceptions")):
            break
    else:
        pytest.fail("labelwise's import was not reported")
    proc.send_signal(signal.SIGINT)
    out, rest = proc.communicate(timeout=60)
    err = "".join(x for x in rest.splitlines(keepends=True) if not x.startswith("import time"))
    assert "Traceback" not in err, err
    assert (proc.returncode, out, err) == (130, "", INTERRUPTED)
