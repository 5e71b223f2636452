"""Issue #31: ``NAME:channels=A+B`` loads a registered dataset with those channels (bidmc's RESP, PLETH, II)."""

from __future__ import annotations

from pathlib import Path

import pytest

from protocols.data import DatasetError
from protocols.datasets import load_dataset
from protocols.modality import channel_modalities

SAMPLES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "paper-samples"


def test_channels_apply_to_registered_datasets_only():
    with pytest.raises(DatasetError, match="applies to registered datasets"):
        load_dataset("./somewhere:channels=a")
    with pytest.raises(DatasetError, match="name the channels"):
        load_dataset("heartrate:channels=")
    with pytest.raises(DatasetError, match="takes no channels option"):
        load_dataset("synthetic-cohort:channels=ECG")


@pytest.mark.skipif(not (SAMPLES / "heartrate").is_dir(), reason=f"no staged bidmc record under {SAMPLES}")
def test_bidmc_respiration_ppg_and_ecg_with_their_modalities():
    ds = load_dataset("heartrate:channels=RESP+PLETH+II:blocks=4", data_root=SAMPLES)
    assert ds.name == "heartrate:channels=RESP+PLETH+II:blocks=4"
    assert ds.channels == ("resp", "ppg", "ii") and channel_modalities(ds) == ("RESP", "PPG", "ECG")
    assert len(ds.subjects) == 4 and ds.sampling_rate == 125.0
