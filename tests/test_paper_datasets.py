"""MIT-BIH on the real record 100, NPE on known signals, and PhysioNet downloads from a local server."""

from __future__ import annotations

import hashlib
import http.server
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from protocols.data import DatasetError
from protocols.datasets import load_dataset
from protocols.datasets.download import DownloadError, check, download
from protocols.npe import dataset_npe, permutation_entropy

WFDB = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "wfdb"
needs_shared = pytest.mark.skipif(not (WFDB / "100.hea").is_file(), reason="../shared/data/wfdb is not beside the checkout")


@pytest.fixture()
def record_100(tmp_path) -> Path:
    root = tmp_path / "data"
    (root / "mitbih").mkdir(parents=True)
    for ext in ("hea", "dat", "atr"):
        shutil.copy(WFDB / f"100.{ext}", root / "mitbih" / f"100.{ext}")
    return root


@needs_shared
def test_mitbih_record_100_matches_wfdb(record_100):
    import wfdb

    ds = load_dataset("mitbih", data_root=record_100)
    ref = wfdb.rdrecord(str(record_100 / "mitbih" / "100"))
    assert ds.channels == ("lead1", "lead2") and ds.sampling_rate == 360.0 and ds.subjects == ("100",)
    rec = ds.recordings[0]
    assert rec.values.shape == (2, 650000)
    np.testing.assert_array_equal(rec.values, ref.p_signal.T)
    np.testing.assert_allclose(rec.timestamps[:3], [0, 1 / 360, 2 / 360])
    assert ds.metadata["leads"]["100"] == ["MLII", "V5"]


@needs_shared
def test_one_record_is_refused_for_loso_and_stats_print_it(record_100, capsys, tmp_path):
    assert main(["run", "forecasting", "--dataset", "mitbih", "--data-root", str(record_100),
                 "--out", str(tmp_path / "o")]) == 2
    assert "needs at least two" in capsys.readouterr().err
    assert main(["data", "stats", "--dataset", "mitbih", "--data-root", str(record_100)]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("mitbih"))
    assert line.split()[1:3] == ["MC", "2"] and 0.8 < float(line.split()[3]) < 0.95


def test_records_201_and_202_are_one_subject(tmp_path):
    import wfdb

    folder = tmp_path / "mitbih"
    folder.mkdir()
    sig = np.random.default_rng(0).normal(size=(720, 2))
    for name in ("201", "202", "203"):
        wfdb.wrsamp(name, fs=360, units=["mV", "mV"], sig_name=["MLII", "V1"], p_signal=sig, fmt=["212", "212"],
                    write_dir=str(folder))
    ds = load_dataset("mitbih", data_root=tmp_path)
    assert ds.subjects == ("201", "203") and [r.subject for r in ds.recordings] == ["201", "201", "203"]


def test_corrupt_or_missing_records_are_named(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        load_dataset("mitbih", data_root=tmp_path / "nowhere")
    (tmp_path / "mitbih").mkdir()
    with pytest.raises(DatasetError, match="no MIT-BIH record"):
        load_dataset("mitbih", data_root=tmp_path)
    (tmp_path / "mitbih" / "100.hea").write_text("100 2 360 650000\n100.dat 212 200 11 1024 995 -22131 0 MLII\n"
                                                 "100.dat 212 200 11 1024 1011 20052 0 V5\n")
    (tmp_path / "mitbih" / "100.dat").write_bytes(b"\x00" * 30)  # truncated
    with pytest.raises(DatasetError, match="100: unreadable WFDB record"):
        load_dataset("mitbih", data_root=tmp_path)
    with pytest.raises(DatasetError, match="pass --data-root"):
        load_dataset("mitbih")


def test_permutation_entropy_on_known_signals():
    assert permutation_entropy(np.arange(500.0)) == pytest.approx(0.0, abs=1e-12)
    noise = np.random.default_rng(0).standard_normal(50_000)
    assert permutation_entropy(noise) > 0.99
    assert dataset_npe([np.stack([np.arange(100.0), -np.arange(100.0)])]) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="too short"):
        permutation_entropy(np.arange(3.0))


# -- downloads from a local server in PhysioNet's layout ------------------------------------------
class _Handler(http.server.BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}
    cut_once: set[str] = set()
    requests: list[tuple[str, str | None]] = []

    def log_message(self, *args):  # keep test output clean
        pass

    def do_GET(self):
        body = self.files.get(self.path)
        self.requests.append((self.path, self.headers.get("Range")))
        if body is None:
            self.send_error(404)
            return
        start = 0
        if self.headers.get("Range"):
            start = int(self.headers["Range"].split("=")[1].split("-")[0])
            self.send_response(206)
        else:
            self.send_response(200)
        chunk = body[start:]
        self.send_header("Content-Length", str(len(chunk)))
        self.end_headers()
        if self.path in self.cut_once:  # an interrupted transfer: half the bytes, then the connection drops
            self.cut_once.discard(self.path)
            self.wfile.write(chunk[: len(chunk) // 2])
            self.wfile.flush()
            self.connection.shutdown(2)
            return
        self.wfile.write(chunk)


@pytest.fixture()
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def _publish(files: dict[str, bytes], wrong: str | None = None) -> None:
    base = "/files/mitdb/1.0.0/"
    sums = "".join(f"{hashlib.sha256(b'tampered' if n == wrong else b).hexdigest()} {n}\n" for n, b in files.items())
    _Handler.files = {base + n: b for n, b in files.items()} | {base + "SHA256SUMS.txt": sums.encode()}
    _Handler.requests = []


def test_download_resumes_an_interrupted_transfer_and_verifies(server, tmp_path):
    payload = {"100.hea": b"header\n", "100.dat": bytes(range(256)) * 400, "100.atr": b"annotations",
               "notes.txt": b"not needed by the loader"}
    _publish(payload)
    _Handler.cut_once = {"/files/mitdb/1.0.0/100.dat"}
    with pytest.raises(DownloadError, match="interrupted"):
        download("mitbih", tmp_path, base=server, show_progress=False)
    part = tmp_path / "mitbih" / "100.dat.part"
    assert part.is_file() and 0 < part.stat().st_size < len(payload["100.dat"])
    download("mitbih", tmp_path, base=server, show_progress=False)
    assert (tmp_path / "mitbih" / "100.dat").read_bytes() == payload["100.dat"] and not part.exists()
    resumed = [r for p, r in _Handler.requests if p.endswith("100.dat") and r]
    assert resumed == [f"bytes={len(payload['100.dat']) // 2}-"]  # continued where it stopped
    assert not (tmp_path / "mitbih" / "notes.txt").exists()  # only what the loader reads
    report = check("mitbih", tmp_path)
    assert sorted(report["present"]) == ["100.atr", "100.dat", "100.hea"] and not report["corrupt"]
    (tmp_path / "mitbih" / "100.atr").write_bytes(b"bit rot")
    (tmp_path / "mitbih" / "100.hea").unlink()
    report = check("mitbih", tmp_path)
    assert report["corrupt"] == ["100.atr"] and report["missing"] == ["100.hea"]
    assert main(["data", "check", "mitbih", "--root", str(tmp_path)]) == 1


def test_wrong_checksum_leaves_no_file(server, tmp_path):
    _publish({"100.hea": b"h", "100.dat": b"d" * 1000, "100.atr": b"a"}, wrong="100.dat")
    with pytest.raises(DownloadError, match="100.dat: SHA-256 mismatch"):
        download("mitbih", tmp_path, base=server, show_progress=False)
    assert not (tmp_path / "mitbih" / "100.dat").exists()
    assert not (tmp_path / "mitbih" / "100.dat.part").exists()


def test_datasets_without_download_say_what_to_do(tmp_path):
    with pytest.raises(DownloadError, match="not on PhysioNet"):
        download("ieee-ppg", tmp_path)
    with pytest.raises(DownloadError, match="no download for 'nope'"):
        download("nope", tmp_path)
