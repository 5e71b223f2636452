"""Gate-assignment vectors (routing interpretability figure)."""

from __future__ import annotations

import numpy as np
import torch

from harness.studies.gates import main
from models.soter.config import preset
from models.soter.gates import cosine_matrix, gate_vectors
from models.soter.model import SoterModel


def test_gate_vectors_are_top_layer_combine_weights():
    torch.manual_seed(0)
    model = SoterModel(preset("soter-tiny")).eval()
    values = torch.randn(3, 2, 40)
    times = torch.arange(40, dtype=torch.float64).repeat(3, 1) / 64
    g = gate_vectors(model, values, times)
    assert g.shape == (3, model.config.num_experts) and (g >= 0).all() and (g.sum(1) <= 1 + 1e-6).all()
    assert "route" not in vars(model.blocks[-1].moe)  # the recording hook is gone afterwards
    h = gate_vectors(model, values, times, layer=0)
    assert h.shape == g.shape
    m = cosine_matrix(np.concatenate([g, h]))
    assert np.allclose(np.diag(m), 1.0) and np.allclose(m, m.T)


def test_cli_needs_a_checkpoint_and_labels_random_weights(tmp_path, capsys):
    assert main(["--weights", str(tmp_path / "missing"), "--out", str(tmp_path)]) == 2
    assert "no trained SOTER checkpoint" in capsys.readouterr().err
    from tests.conftest import make_dataset
    from protocols.datasets.folder import write_folder_dataset

    write_folder_dataset(make_dataset(n_subjects=2, n_samples=400), tmp_path / "toy")
    assert main(["--model", "soter-tiny-random", "--dataset", str(tmp_path / "toy"), "--signals", "a", "b",
                 "--segments", "2", "--length", "64", "--out", str(tmp_path / "fig")]) == 0
    matrix = np.loadtxt(tmp_path / "fig" / "gate-similarity-soter-tiny-random.csv", delimiter=",")
    assert matrix.shape == (4, 4) and (tmp_path / "fig" / "gate-similarity-soter-tiny-random.png").is_file()
