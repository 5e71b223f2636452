"""The paper's training studies (issue #28): what trains models and then evaluates them with the runner.

* :mod:`harness.studies.runners`: ablation, sensitivity, exposure and corpus-matched studies
  (``python -m harness.studies train|evaluate``);
* :mod:`harness.studies.chronos2_scratch`: the Chronos-2 architecture trained from scratch on SOTER's
  corpus for the corpus-matched table (a study, not a baseline: no released weights);
* :mod:`harness.studies.gates`: the routing interpretability figure (``python -m harness.studies.gates``).

Their tables are drawn by :mod:`harness.reporting.study_tables`: the report reads the studies' output
files, and reporting sits below the studies (which run the runner), so the drawing is reporting's.
"""
