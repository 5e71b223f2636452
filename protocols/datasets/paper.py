"""Registration of the paper's evaluation datasets (loaders: issue #6)."""
