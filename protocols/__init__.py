"""What is measured: datasets, windows, splits, normalisation, masks, noise and metrics."""
