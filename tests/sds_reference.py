"""A deliberately slow, plain-loop reading of Algorithm 1 of Meng et al. 2021 (Steps 2-4).

Written from the paper's pseudocode, independent of the package's vectorised code, to check
it. The edge rules are the package's documented ones: vote ties to the smallest label, models
sorted by score descending with ties by index, k = max(1, floor(top_fraction * n)) models in
each of the top and bottom groups.
"""

from __future__ import annotations

import math


def discrimination(
    predictions: list[list[int]], top_fraction: float = 0.27
) -> tuple[list[int], list[int], list[int], list[int], list[float]]:
    """(votes, scores, top, bottom, discrimination) for (n_models x N) predicted labels."""
    n = len(predictions)
    m = len(predictions[0])
    labels = sorted({lab for row in predictions for lab in row})

    votes = []  # Step 2, lines 11-16
    for j in range(m):
        best, best_count = None, -1
        for lab in labels:  # ascending, and only a strictly larger count replaces: ties -> smallest
            count = 0
            for i in range(n):
                if predictions[i][j] == lab:
                    count += 1
            if count > best_count:
                best, best_count = lab, count
        votes.append(best)

    scores = []  # Step 3, lines 17-22
    for i in range(n):
        score = 0
        for j in range(m):
            if predictions[i][j] == votes[j]:
                score += 1
        scores.append(score)
    ranked = sorted(range(n), key=lambda i: (-scores[i], i))  # line 23
    k = max(1, math.floor(round(top_fraction * n, 9)))  # line 24
    top, bottom = ranked[:k], ranked[n - k :]

    disc = []  # Step 4, lines 25-34
    for j in range(m):
        d = 0
        for i in range(n):
            if i in top:
                if predictions[i][j] == votes[j]:
                    d += 1
            elif i in bottom and predictions[i][j] == votes[j]:
                d -= 1
        disc.append(d / len(top))
    return votes, scores, top, bottom, disc


def select(
    predictions: list[list[int]],
    budget: int,
    seed: int = 0,
    top_fraction: float = 0.27,
    candidate_fraction: float = 0.25,
) -> list[int]:
    """Step 5, lines 35-38: a random draw of ``budget`` of the top 25% by discrimination."""
    import random

    disc = discrimination(predictions, top_fraction)[4]
    m = len(disc)
    rnd = random.Random(seed)
    tie = [rnd.random() for _ in range(m)]
    ranked = sorted(range(m), key=lambda j: (-disc[j], tie[j]))
    n_cand = max(1, math.ceil(round(candidate_fraction * m, 9)))
    return rnd.sample(ranked[:n_cand], budget)
