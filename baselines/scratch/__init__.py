"""Baseline architectures trained from scratch on SOTER's pre-training corpus (the paper's
corpus-matched comparison), with the same sampler, steps and batch as SOTER."""
