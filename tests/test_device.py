"""--device: auto resolves to the CPU here without changing any key; a GPU that is not there is a usage
error; records name the device; CPU and GPU forecasts agree (where a GPU exists)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from harness.cli import main
from harness.run.runner import RunConfig, plan, resolve_device
from harness.records.store import read_records
from protocols.specs import SpecError, Setting

CUDA = torch.cuda.is_available()


@pytest.mark.parametrize("text", ["gpu", "cuda:x", "CUDA", ""])
def test_unknown_devices_are_refused(text):
    with pytest.raises(SpecError, match="--device must be"):
        resolve_device(text)


@pytest.mark.skipif(CUDA, reason="checks the CPU-only behaviour")
def test_on_a_cpu_machine_auto_is_cpu_and_cuda_is_a_usage_error(folder, tmp_path, capsys):
    assert resolve_device("auto") == "cpu"
    with pytest.raises(SpecError, match="CUDA is not available"):
        resolve_device("cuda:0")
    assert main(["run", "forecasting", "--dataset", str(folder), "--models", "last-value", "--device", "cuda",
                 "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    assert "CUDA is not available" in capsys.readouterr().err
    assert main(["run", "forecasting", "--dataset", str(folder), "--models", "last-value", "--settings", "48/24",
                 "--max-windows-per-subject", "2", "--out", str(tmp_path / "auto"), "--no-progress"]) == 0
    assert "[device] auto: no CUDA device here, every model runs on the CPU" in capsys.readouterr().err


def test_auto_on_the_cpu_keeps_every_key_and_records_name_the_device(folder, tmp_path):
    def keys(device: str) -> list[str]:
        config = RunConfig(datasets=(str(folder),), models=("last-value", "soter"), out=tmp_path / device,
                           options={"settings": (Setting(48, 24),), "max_windows_per_subject": 2}, progress=False,
                           device=device)
        return [f["key"] for _, f in plan(config)[0]]

    if not CUDA:
        assert keys("auto") == keys("cpu")
    assert main(["run", "forecasting", "--dataset", str(folder), "--models", "last-value", "--settings", "48/24",
                 "--max-windows-per-subject", "2", "--device", "cpu", "--out", str(tmp_path / "o"),
                 "--no-progress"]) == 0
    frame = read_records(tmp_path / "o" / "records.csv")
    assert {json.loads(i)["device"] for i in frame.model_info} == {"cpu"}


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device (run on the accelerator when one is lent)")
def test_soter_forecasts_agree_on_cpu_and_gpu():
    from models.registry import get_spec
    from protocols import interface
    from protocols.interface import SeriesBatch

    rng = np.random.default_rng(0)
    times = np.tile(np.arange(96, dtype=float) / 64, (4, 1))
    batch = SeriesBatch(rng.uniform(0, 1, (4, 2, 96)), times)
    queries = times[:, -1:] + np.arange(1, 25)[None, :] / 64
    cpu = interface.forecast(get_spec("soter").load(device="cpu"), batch, queries)
    gpu = interface.forecast(get_spec("soter").load(device="cuda"), batch, queries)
    np.testing.assert_allclose(gpu, cpu, atol=2e-2)  # the adaptive solver's declared batch tolerance
