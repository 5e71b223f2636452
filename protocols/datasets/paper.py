"""Registration of the paper's evaluation datasets (read from --data-root; nothing is read here)."""

from protocols.datasets import DatasetSpec, register

register(DatasetSpec("mitbih", "protocols.datasets.mitbih:load",
                     "MIT-BIH Arrhythmia (PhysioNet mitdb): 2 ECG leads, 360 Hz, LOSO by person", needs_root=True))
