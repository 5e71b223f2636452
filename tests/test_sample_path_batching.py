"""Sample-path workers forecast many series per call, each series' random draws from a stream of its own
(``baselines/workers/_protocol.py``: ``row_streams``), so that a series' paths are exactly those it draws alone.

The streams are checked here on the layouts the workers declare (rows in blocks: Lag-Llama; sample-major: Sundial;
per draw: Moirai-MoE's mixture), then Moirai-MoE's worker end to end on a tiny randomly initialised uni2ts module in
its own environment, where that environment exists (it is made on first use and needs the network), and Sundial's
own flow head (the upstream file, where staged). Lag-Llama's and Sundial's workers are checked end to end on
stand-ins of their code (tests/test_lag_llama.py, tests/test_remote_code.py): their environments need the network."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from baselines import isolated
from baselines.testing import queries as _queries, series as _series
from models.registry import get_spec
from protocols import interface

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def protocol():
    sys.path.insert(0, str(isolated.WORKERS_DIR))
    try:
        import _protocol
    finally:
        sys.path.remove(str(isolated.WORKERS_DIR))
    return _protocol


def _alone_and_together(protocol, draw, rows: int, outer):
    """``draw(batch)`` for each row alone under the global seed, then for all rows under row streams."""
    alone = []
    for r in range(rows):
        torch.manual_seed(3)
        alone.append(draw(torch.arange(r, r + 1, dtype=torch.float32)))
    torch.manual_seed(3)
    with protocol.row_streams(rows, 3, outer=outer):
        together = draw(torch.arange(rows, dtype=torch.float32))
    return alone, together


def test_rows_in_blocks_draw_what_each_draws_alone(protocol):
    s = 6

    def draw(x):  # Lag-Llama: each row's paths one block (repeat_interleave), a StudentT step, a choice
        level = x.repeat_interleave(s)
        for _ in range(3):
            level = level + torch.distributions.StudentT(torch.full_like(level, 4.0)).sample()
        choice = torch.distributions.Categorical(probs=torch.ones(level.shape[0], 3)).sample((2,)).T
        return torch.cat([level[:, None], choice.float()], 1).view(len(x), s, 3)

    alone, together = _alone_and_together(protocol, draw, 4, 1)
    for r, row in enumerate(alone):
        assert torch.equal(row[0], together[r])
    assert not torch.equal(together[0, :, 0] - 0, together[1, :, 0] - 1)  # rows do not share draws


def test_sample_major_rows_and_a_layout_per_draw(protocol):
    s = 5

    def sundial(x):  # z.repeat(S, 1), one noise draw over every sample and row
        z = x[:, None].repeat(s, 1)
        return (z + torch.randn(z.shape[0], 2) + torch.rand_like(z)).reshape(s, -1, 2).transpose(0, 1)

    alone, together = _alone_and_together(protocol, sundial, 3, s)
    assert all(torch.equal(row[0], together[r]) for r, row in enumerate(alone))

    def moirai(x):  # [S, rows, T] draws, the mixture's choice S per distribution, then [1, S, rows, T]
        loc = x[:, None].expand(-1, 4)
        first = torch.distributions.Normal(loc, 1.0).sample((s,))
        pick = torch.distributions.Categorical(probs=torch.ones(len(x), 4, 3)).sample((s,))
        later = torch.distributions.Categorical(probs=torch.ones(s, len(x), 4, 3)).sample((1,))
        gamma = torch.distributions.Gamma(first.abs() + 1, 1.0).sample((1,))
        return torch.stack([first, pick.float(), later[0].float(), gamma[0]]).transpose(0, 2)

    def layout(op, draws):
        return 1 if op == "multinomial" and draws > 1 else s

    alone, together = _alone_and_together(protocol, moirai, 3, layout)
    assert all(torch.equal(row[0], together[r]) for r, row in enumerate(alone))


def test_a_draw_the_streams_cannot_split_is_refused(protocol):
    with pytest.raises(protocol.RowStreamError, match="do not split into 1 x 3 rows"):
        with protocol.row_streams(3, 0):
            torch.randn(4)
    with pytest.raises(protocol.RowStreamError, match="randperm"):
        with protocol.row_streams(2, 0):
            torch.randperm(6)


# ---------------------------------------------------------------- Sundial's own flow head (upstream code)

def test_sundial_s_upstream_flow_head_samples_rows_together_as_alone(protocol, monkeypatch):
    """Sundial's sampling, the only place it draws (``FlowLoss.sample``: ``z.repeat(S, 1)``, one noise draw over
    every sample and row), from the staged upstream file itself: the layout the worker declares (sample-major)."""
    import importlib.util
    import types

    from tests.upstream import require_code

    code = require_code("SOTER_BENCH_SUNDIAL_CODE", "sundial-sktime-fork/sktime/libs/sundial")
    stub = types.ModuleType("sktime.utils.dependencies")  # the fork's only sktime import: a guarded import_module
    stub._safe_import = importlib.import_module
    for name, module in (("sktime", types.ModuleType("sktime")), ("sktime.utils", types.ModuleType("sktime.utils")),
                         ("sktime.utils.dependencies", stub)):
        monkeypatch.setitem(sys.modules, name, module)
    spec = importlib.util.spec_from_file_location("sundial_flow_loss", code / "flow_loss.py")
    flow = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(flow)
    torch.manual_seed(0)
    head = flow.FlowLoss(target_channels=6, z_channels=8, depth=1, width=16, num_sampling_steps=4).eval()
    for p in head.parameters():  # Sundial zero-initialises its output layers: an untrained head returns zeros
        torch.nn.init.normal_(p, std=0.3)
    z = torch.randn(5, 8)
    s = 7
    with torch.no_grad():
        alone = []
        for r in range(len(z)):
            torch.manual_seed(11)
            alone.append(head.sample(z[r:r + 1], s)[0])  # [S, channels]
        torch.manual_seed(11)
        with protocol.row_streams(len(z), 11, outer=s):
            together = head.sample(z, s)  # [rows, S, channels]
        torch.manual_seed(11)
        shared = head.sample(z, s)  # one stream for the whole batch: what the worker must not do
    rtol, atol = protocol.BATCHED_ROWS_TOLERANCE  # the same draws; the batched MLP rounds differently (here ~5e-7)
    for r, row in enumerate(alone):
        torch.testing.assert_close(together[r], row, rtol=rtol, atol=atol)
    assert not torch.allclose(shared[1], alone[1], atol=1e-3)


# ---------------------------------------------------------------- Moirai-MoE's worker on the real uni2ts

@pytest.fixture(scope="module")
def tiny_moirai_moe(tmp_path_factory):
    spec = isolated.ENVS["moirai"]
    if not isolated.env_ready(spec):
        pytest.skip("the moirai environment is not made here (made on first use, with the network)")
    python = isolated.env_python(spec.root())
    folder = tmp_path_factory.mktemp("moirai-moe-tiny")
    build = folder / "spec.json"
    build.write_text(json.dumps({"family": "moirai_moe", "out": str(folder / "weights"), "seed": 0, "top_k": 2,
                                 "config": {"d_model": 64, "d_ff": 64, "num_layers": 1, "patch_sizes": [16],
                                            "max_seq_len": 64, "attn_dropout_p": 0.0, "dropout_p": 0.0}}))
    subprocess.run([str(python), str(isolated.WORKERS_DIR / "build_random.py"), str(build)], check=True,
                   capture_output=True)
    return str(python), str(folder / "weights")


def _moirai(python: str, weights: str, batch: int) -> isolated.WorkerModel:
    return isolated.WorkerModel("moirai-moe-small", get_spec("moirai-moe-small").model_capabilities(), python,
                                isolated.WORKERS_DIR / "moirai_worker.py", weights=weights,
                                options={"family": "moirai-moe", "num_samples": 7, "batch": batch}, seed=0)


def test_moirai_moe_rows_forecast_together_equal_one_at_a_time(tiny_moirai_moe):
    alone, together = (_moirai(*tiny_moirai_moe, batch) for batch in (1, 3))  # 5 rows: calls of 3 and 2
    assert together.describe()["rows_per_call"] == 3 and alone.batch_tolerance is None
    batch = _series(5, 2, 48)
    q = _queries(batch, 20)  # two patches: the autoregressive steps draw at [1, S, rows, ...] too
    point_alone, quant_alone = interface.forecast_quantiles(alone, batch, q)
    point, quant = interface.forecast_quantiles(together, batch, q)
    # the same draws; the batch's float32 arithmetic rounds differently (here at most ~5e-7), within the tolerance
    # the worker declares (other draws would move the median of 7 paths by whole units)
    rtol, atol = together.batch_tolerance
    np.testing.assert_allclose(point, point_alone, rtol=rtol, atol=atol)
    np.testing.assert_allclose(quant, quant_alone, rtol=rtol, atol=atol)
    alone.close()
    together.close()
