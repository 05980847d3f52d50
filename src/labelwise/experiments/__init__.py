"""Repeatable studies and the ready-made operational contexts they run on.

* :mod:`labelwise.experiments.study` -- the NumPy-only harness: repeated selections at many
  sample sizes, MSE and relative efficiency E = MSE_method / MSE_SRS (Li et al. 2019, Sec. 4.2).
* :mod:`labelwise.experiments.operational` -- ``labelwise study operational``: the CES
  paper's Table 1 and Table 3 on the contexts below.
* :mod:`labelwise.experiments.comparative` -- ``labelwise study comparative``: the SDS paper's
  Table II (ranking many models with few labels), on :mod:`labelwise.experiments.zoo`, 28
  MNIST-1D classifiers of varied architecture, width, training length and seed.
* :mod:`labelwise.experiments.quality_study` -- ``labelwise study quality``: test-set quality
  (Table 1) and guided generation (Table 2) on digits and MNIST-1D models.

Each context module builds a trained model together with an "operational" pile of inputs
whose distribution differs from the training data (corruptions, label-swap mutants, ...), so
that estimators can be compared against the true operational accuracy:

* :mod:`labelwise.experiments.digits` -- scikit-learn's 8x8 digits, LeNet-style CNN, with the
  "patch", "light" and "resolution" shifts of the CES paper.
* :mod:`labelwise.experiments.mnist1d` -- MNIST-1D (generated locally), 1D CNN, clean and
  label-swap mutants 8<->0, 7<->1, 9<->3.
* :mod:`labelwise.experiments.regression` -- Friedman #1 regression MLP (the paper's Driving
  analogue, accuracy 1-MSE), clean, "patch" and "light".

Shift functions need only NumPy; training needs ``pip install 'labelwise[torch]'`` (and
``mnist1d`` for MNIST-1D). Importing this package never imports a deep-learning framework.
"""
