"""A deliberately slow, plain-loop reading of Algorithm 1 (Li et al. 2019, Sec. 3.2).

Written from the paper's text, independent of the package's vectorised code, to check it.
"""

from __future__ import annotations

import math

import numpy as np


def sections(column: list[float], n_sections: int) -> list[int]:
    """Section of each value: K equal sections of [min, max], the last one closed."""
    lo, hi = min(column), max(column)
    width = (hi - lo) / n_sections
    out = []
    for v in column:
        k = 0
        while k < n_sections - 1 and v >= lo + (k + 1) * width:
            k += 1
        out.append(k)
    return out


def objective(
    activations: np.ndarray, rows: list[int], n_sections: int, kind: str, epsilon: float = 1e-10
) -> float:
    """Objective of T = rows, averaged over the neurons that are not constant on S."""
    n, m = activations.shape
    total, used = 0.0, 0
    for j in range(m):
        column = [float(activations[i, j]) for i in range(n)]
        if max(column) == min(column):
            continue
        used += 1
        codes = sections(column, n_sections)
        p_s = [codes.count(k) / n for k in range(n_sections)]
        p_t = [sum(1 for i in rows if codes[i] == k) / len(rows) for k in range(n_sections)]
        for k in range(n_sections):
            if kind == "kl":
                if p_t[k] > 0:
                    total += p_t[k] * math.log(p_t[k] / p_s[k])
            elif kind == "ce" or (kind == "ce-common" and p_s[k] >= 0.5 / len(rows)):
                total -= p_s[k] * math.log(max(p_t[k], epsilon))
    return total / used


def select(
    activations: np.ndarray,
    budget: int,
    *,
    n_sections: int = 20,
    initial: int = 30,
    group_size: int = 5,
    n_groups: int = 300,
    kind: str = "ce",
    seed: int = 0,
) -> list[int]:
    """Algorithm 1 with Python's own random module."""
    import random

    rnd = random.Random(seed)
    n = activations.shape[0]
    chosen = rnd.sample(range(n), min(initial, budget))
    while len(chosen) < budget:
        size = min(group_size, budget - len(chosen))
        rest = [i for i in range(n) if i not in chosen]
        groups = [rnd.sample(rest, size) for _ in range(n_groups)]
        best = min(groups, key=lambda g: objective(activations, chosen + g, n_sections, kind))
        chosen += best
    return chosen
