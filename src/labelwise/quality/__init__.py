"""Test-set quality in the model's feature space, and classic adequacy metrics.

- :mod:`~labelwise.quality.feature_space` -- equivalence partitioning, centroid positioning,
  boundary conditioning (and pair-wise), covariate shift (Sections 4.1-4.3 of the dataset
  characterisation paper; its formulas are lost in our text, so each docstring states the
  definition used).
- :mod:`~labelwise.quality.shift` -- covariate shift as a kernel MMD two-sample test with a
  permutation p-value, per class and overall (it separates clean from shifted test sets,
  which the JSD cannot).
- :mod:`~labelwise.quality.generation` -- guided generation of extra test points toward class
  centroids or class boundaries (Algorithm 1, Table 2).
- :mod:`~labelwise.quality.adequacy` -- neuron coverage, KMNC, NBC, SNAC, TKNC (DeepGauge),
  streaming and mergeable, equal to dnn-tip's values.
- :mod:`~labelwise.quality.surprise` -- surprise adequacy LSA, DSA, MDSA, equal to dnn-tip's.
- :mod:`~labelwise.quality.report` -- one per-class summary and box plots, behind the
  ``labelwise quality`` command (``labelwise study quality`` runs it on trained models).
"""

from __future__ import annotations

from .adequacy import (
    DEFAULT_KMNC_SECTIONS,
    ActivationProfile,
    ActivationStatistics,
    AdequacyCoverage,
    KMultisectionCoverage,
    NeuronBoundaryCoverage,
    NeuronCoverage,
    StrongNeuronActivationCoverage,
    TopKNeuronCoverage,
    kmnc,
    nbc,
    neuron_coverage,
    snac,
    tknc,
)
from .feature_space import (
    BoundaryConditioning,
    CentroidPositioning,
    CovariateShift,
    EquivalencePartitioning,
    PairwiseBoundaryConditioning,
    boundary_conditioning,
    centroid_positioning,
    covariate_shift,
    equivalence_partitioning,
    pairwise_boundary_conditioning,
)
from .generation import (
    GeneratedSet,
    GenerationTable,
    LinearHead,
    generate,
    generation_table,
    linear_head,
)
from .shift import MMDShift, MMDTest, mmd_shift, mmd_test
from .surprise import DSA, LSA, MDSA, SurpriseCoverage, surprise_coverage

__all__ = [
    "DEFAULT_KMNC_SECTIONS",
    "DSA",
    "LSA",
    "MDSA",
    "ActivationProfile",
    "ActivationStatistics",
    "AdequacyCoverage",
    "BoundaryConditioning",
    "CentroidPositioning",
    "CovariateShift",
    "EquivalencePartitioning",
    "GeneratedSet",
    "GenerationTable",
    "KMultisectionCoverage",
    "LinearHead",
    "MMDShift",
    "MMDTest",
    "NeuronBoundaryCoverage",
    "NeuronCoverage",
    "PairwiseBoundaryConditioning",
    "StrongNeuronActivationCoverage",
    "SurpriseCoverage",
    "TopKNeuronCoverage",
    "boundary_conditioning",
    "centroid_positioning",
    "covariate_shift",
    "equivalence_partitioning",
    "generate",
    "generation_table",
    "kmnc",
    "linear_head",
    "mmd_shift",
    "mmd_test",
    "nbc",
    "neuron_coverage",
    "pairwise_boundary_conditioning",
    "snac",
    "surprise_coverage",
    "tknc",
]
