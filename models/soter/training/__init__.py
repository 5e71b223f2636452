"""SOTER pre-training: corpus preprocessing, a resumable sampler, and the (torchrun) trainer."""
