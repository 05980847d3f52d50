"""Ready-made operational contexts for demos and studies.

Each submodule builds a trained model together with an "operational" pile of inputs whose
distribution differs from the training data (image corruptions, label-swap mutants, ...),
so that accuracy estimators can be compared against the true operational accuracy.

* :mod:`labelwise.experiments.digits` -- scikit-learn's 8x8 digits with the "patch",
  "light" and "resolution" shifts and label-swap mutants of the CES paper (Li et al.,
  FSE 2019). The shift functions need only NumPy; training needs ``labelwise[torch]``.

Importing this package (or its submodules) never imports a deep-learning framework.
"""
