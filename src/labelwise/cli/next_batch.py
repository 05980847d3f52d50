"""``labelwise next``: the campaign's next batch of rows to label."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._validation import check_batch_size
from ._common import DefaultsHelpFormatter
from .campaign import STATE_FILE, CampaignState


def add_parser(sub: Any) -> None:
    n = sub.add_parser(
        "next",
        help="propose the next batch of rows to label in a campaign",
        description=(
            "Propose the next BATCH rows to label in the campaign in DIR (started with "
            "'labelwise campaign'). Rewrites DIR/to_label.csv with every row proposed so far "
            "(order, row, id, new: 1 for this batch) and saves the campaign's state, so a "
            "session can stop after any command and resume later. Give the labels to "
            "'labelwise estimate DIR --labels labels.csv' (all at once or in parts); rows "
            "proposed earlier but not labelled yet stay in to_label.csv with new = 0."
        ),
        formatter_class=DefaultsHelpFormatter,
    )
    n.add_argument("dir", type=Path, help="campaign directory written by 'labelwise campaign'")
    n.add_argument(
        "--batch",
        "--budget",  # as 'select --budget' says it; 'next --budget 10' was an unknown flag
        dest="batch",
        type=int,
        default=20,
        help="rows to propose (--budget: the same)",
    )
    n.set_defaults(func=cmd_next)


def cmd_next(args: argparse.Namespace) -> int:
    st = CampaignState.open(args.dir)
    camp = st.camp
    left = camp.population_size - camp.n_proposed
    waiting = int(camp.pending.size)
    rows = propose_batch(st, args.batch)
    left -= rows.size
    print(
        f"{camp.method} campaign: {rows.size} new rows to label; {camp.n_proposed} proposed, "
        f"{camp.n_recorded} labelled, {left:,} never proposed (pile of {camp.population_size:,})"
    )
    print(f"  new rows to label ({rows.size}): {', '.join(str(int(r)) for r in rows)}")
    if waiting:
        print(
            f"  {waiting} rows proposed earlier still await labels (new = 0 in to_label.csv); "
            "estimates use the labelled rows only"
        )
    print(f"  wrote {st.ws.to_label} (column new = 1 for these) and {st.ws.path / STATE_FILE}")
    return 0


def propose_batch(st: CampaignState, batch: int) -> NDArray[np.int64]:
    """Propose ``batch`` more rows; rewrite DIR/to_label.csv and save the state.

    What ``labelwise next DIR --batch BATCH`` does (``labelwise label`` calls it too).
    """
    camp = st.camp
    left = camp.population_size - camp.n_proposed
    check_batch_size(batch, "--batch", left=left, total=camp.population_size)
    rows = camp.propose(batch)
    st.last_batch = int(rows.size)
    proposed = st.camp.proposed
    # to_label.csv first: if saving the state then fails, the next call proposes these again
    st.ws.write_to_label(proposed, new_from=proposed.size - rows.size)
    st.save()
    return rows
