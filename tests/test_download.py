"""Downloads from a local HTTP server laid out like PhysioNet: resume, checksums, archives, check."""

from __future__ import annotations

import argparse
import hashlib
import http.server
import io
import threading
import zipfile
from pathlib import Path

import pytest

from harness.commands import data as data_cli
from protocols.datasets.check import check_dataset
from protocols.datasets.download import DownloadError, check, download


class Server:
    """A threaded server on 127.0.0.1 serving ``files`` (URL path -> bytes), with Range support."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.cut_once: set[str] = set()  # first request: half the body, then the connection drops
        self.requests: list[tuple[str, str | None]] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                owner.requests.append((self.path, self.headers.get("Range")))
                body = owner.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                start = 0
                if rng := self.headers.get("Range"):
                    start = int(rng.removeprefix("bytes=").split("-")[0])
                    if start >= len(body):
                        self.send_error(416)
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                else:
                    self.send_response(200)
                chunk = body[start:]
                self.send_header("Content-Length", str(len(chunk)))
                self.end_headers()
                if self.path in owner.cut_once:
                    owner.cut_once.discard(self.path)
                    self.wfile.write(chunk[: len(chunk) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(2)
                    return
                self.wfile.write(chunk)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def publish(self, slug: str, version: str, files: dict[str, bytes], wrong: tuple[str, ...] = ()) -> None:
        base = f"/files/{slug}/{version}/"
        sums = "".join(f"{hashlib.sha256(b'x' + b if n in wrong else b).hexdigest()} {n}\n" for n, b in files.items())
        self.files = {base + n: b for n, b in files.items()} | {base + "SHA256SUMS.txt": sums.encode()}
        self.requests.clear()


@pytest.fixture()
def server():
    srv = Server()
    thread = threading.Thread(target=srv.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()
    thread.join()


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    data_cli.add_parser(parser.add_subparsers(dest="command"))
    return data_cli.run(parser.parse_args(["data", *argv]))


MITDB = {"100.hea": b"100 2 360 10\n", "100.dat": bytes(range(256)) * 300, "100.atr": b"annotations",
         "x_mitdb/x_108.hea": b"excluded", "RECORDS": b"100\n"}


def test_interrupted_transfer_resumes_with_a_range_request(server, tmp_path):
    server.publish("mitdb", "1.0.0", MITDB)
    server.cut_once = {"/files/mitdb/1.0.0/100.dat"}
    with pytest.raises(DownloadError, match="100.dat: transfer interrupted.*run the same command again"):
        download("mitbih", tmp_path, base=server.url, show_progress=False)
    part = tmp_path / "mitbih" / "100.dat.part"
    half = part.stat().st_size
    assert 0 < half < len(MITDB["100.dat"]) and not (tmp_path / "mitbih" / "100.dat").exists()
    server.requests.clear()
    files = download("mitbih", tmp_path, base=server.url, show_progress=False)
    assert sorted(p.name for p in files) == ["100.atr", "100.dat", "100.hea"]  # only what the loader reads
    for name in ("100.hea", "100.dat", "100.atr"):
        assert (tmp_path / "mitbih" / name).read_bytes() == MITDB[name]
    assert not part.exists() and not (tmp_path / "mitbih" / "x_mitdb").exists()
    assert [r for p, r in server.requests if p.endswith("100.dat")] == [f"bytes={half}-"]
    server.requests.clear()  # a third run fetches only the sums: every file is verified in place
    download("mitbih", tmp_path, base=server.url, show_progress=False)
    assert [p for p, _ in server.requests] == ["/files/mitdb/1.0.0/SHA256SUMS.txt"]


def test_a_complete_part_file_is_verified_and_renamed(server, tmp_path):
    server.publish("mitdb", "1.0.0", MITDB)
    folder = tmp_path / "mitbih"
    folder.mkdir()
    (folder / "100.dat.part").write_bytes(MITDB["100.dat"])  # crashed after the last byte, before the rename
    download("mitbih", tmp_path, base=server.url, show_progress=False)
    assert (folder / "100.dat").read_bytes() == MITDB["100.dat"]


def test_wrong_checksum_names_the_file_and_leaves_nothing(server, tmp_path):
    server.publish("mitdb", "1.0.0", MITDB, wrong=("100.dat",))
    with pytest.raises(DownloadError, match=r"100.dat: SHA-256 mismatch"):
        download("mitbih", tmp_path, base=server.url, show_progress=False)
    assert not (tmp_path / "mitbih" / "100.dat").exists() and not (tmp_path / "mitbih" / "100.dat.part").exists()


def test_check_reports_present_missing_and_corrupt(server, tmp_path, capsys):
    server.publish("mitdb", "1.0.0", MITDB)
    download("mitbih", tmp_path, base=server.url, show_progress=False)
    assert check("mitbih", tmp_path) == {"present": ["100.hea", "100.dat", "100.atr"], "missing": [], "corrupt": []}
    assert _cli("check", "mitbih", "--root", str(tmp_path)) == 0
    (tmp_path / "mitbih" / "100.atr").write_bytes(b"bit rot")
    (tmp_path / "mitbih" / "100.hea").unlink()
    report = check_dataset("mitbih", tmp_path)
    assert (report.present, report.missing, report.corrupt) == (["100.dat"], ["100.hea"], ["100.atr"])
    assert _cli("check", "mitbih", "--root", str(tmp_path)) == 1
    out = capsys.readouterr().out
    assert "missing: 1  100.hea" in out and "corrupt: 1  100.atr" in out
    with pytest.raises(DownloadError, match="wdd: not found; download wdd first"):
        check_dataset("wdd", tmp_path)


def test_check_without_sums_reads_with_the_loader(tmp_path):
    """Records placed by hand have no SHA256SUMS.txt: the loader says whether they read."""
    wfdb_dir = Path(__file__).resolve().parents[2] / "shared" / "data" / "wfdb"
    if not (wfdb_dir / "100.hea").is_file():
        pytest.skip(f"real WFDB records not found at {wfdb_dir}")
    (tmp_path / "mitbih").mkdir()
    for ext in ("hea", "dat"):
        (tmp_path / "mitbih" / f"100.{ext}").write_bytes((wfdb_dir / f"100.{ext}").read_bytes())
    report = check_dataset("mitbih", tmp_path)
    assert report.ok and report.present == ["100"] and "loader" in report.how
    (tmp_path / "mitbih" / "100.dat").write_bytes(b"\x00" * 10)  # truncated: named by record, before the loader
    report = check_dataset("mitbih", tmp_path)
    assert not report.ok and report.corrupt == ["100"] and report.present == []
    assert "100.dat: truncated: expected 1950000 bytes, found 10" in report.problems["100"]


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, body in members.items():
            zf.writestr(name, body)
    return buf.getvalue()


def test_archives_are_fetched_and_unpacked_when_no_loose_file_is_listed(server, tmp_path, capsys):
    archive = _zip({"MMASH/DataPaper/user_1/Actigraph.csv": b"a", "MMASH/DataPaper/user_1/Activity.csv": b"b"})
    server.publish("mmash", "1.0.0", {"MMASH.zip": archive, "LICENSE.txt": b"licence"})
    assert _cli("download", "mmash", "--root", str(tmp_path), "--base-url", server.url, "--no-progress") == 0
    assert (tmp_path / "mmash" / "MMASH" / "DataPaper" / "user_1" / "Activity.csv").read_bytes() == b"b"
    assert not (tmp_path / "mmash" / "LICENSE.txt").exists()
    assert "mmash: 1 files verified" in capsys.readouterr().out


def test_an_archive_escaping_its_folder_is_refused(server, tmp_path):
    server.publish("mmash", "1.0.0", {"MMASH.zip": _zip({"../evil.csv": b"x"})})
    with pytest.raises(DownloadError, match="outside"):
        download("mmash", tmp_path, base=server.url, show_progress=False)
    assert not (tmp_path / "evil.csv").exists()


@pytest.mark.parametrize("entry", ["../../escape/user_1/Actigraph.csv", "ABSOLUTE", "link/user_1/Actigraph.csv"])
def test_a_listing_entry_escaping_the_root_is_refused_before_any_fetch(server, tmp_path, entry):
    """A SHA256SUMS.txt entry that is absolute, climbs with ``..`` or leaves through a symlink writes nothing."""
    escape = tmp_path / "escape"
    escape.mkdir()
    folder = tmp_path / "root" / "mmash"
    folder.mkdir(parents=True)
    (folder / "link").symlink_to(escape, target_is_directory=True)
    entry = entry.replace("ABSOLUTE", str(escape / "user_1" / "Actigraph.csv"))
    server.publish("mmash", "1.0.0", {entry: b"hostile", "user_2/Actigraph.csv": b"fine"})
    with pytest.raises(DownloadError, match=f"SHA256SUMS.txt: entry '{entry}' leads outside .*; refused"):
        download("mmash", tmp_path / "root", base=server.url, show_progress=False)
    assert [p for p, _ in server.requests] == ["/files/mmash/1.0.0/SHA256SUMS.txt"]
    assert list(escape.iterdir()) == [] and not (folder / "user_2").exists()
    with pytest.raises(DownloadError, match=f"entry '{entry}' leads outside"):  # `data check` reads nothing there
        check("mmash", tmp_path / "root")


def test_heartrate_fetches_the_bidmc_records_and_names_the_ts_alternative(server, tmp_path, capsys):
    server.publish("bidmc", "1.0.0", {"bidmc01.hea": b"h", "bidmc01.dat": b"d", "bidmc01.breath": b"b",
                                      "bidmc_csv/bidmc_01_Signals.csv": b"c"})
    assert _cli("download", "heartrate", "--root", str(tmp_path), "--base-url", server.url, "--no-progress") == 0
    assert sorted(p.name for p in (tmp_path / "heartrate").iterdir()) == ["SHA256SUMS.txt", "bidmc01.dat", "bidmc01.hea"]
    assert "BIDMC32HR" in capsys.readouterr().out


def test_ieee_ppg_prints_instructions_and_unknown_names_are_errors(tmp_path, capsys):
    assert _cli("download", "ieee-ppg", "--root", str(tmp_path)) == 0
    out = capsys.readouterr().out
    assert "not on PhysioNet" in out and f"{tmp_path}/ieee-ppg/" in out and "IEEEPPG_TRAIN.ts" in out
    assert not (tmp_path / "ieee-ppg").exists()
    with pytest.raises(DownloadError, match="no download for 'nope'"):
        download("nope", tmp_path)


def test_selected_files_follow_physionet_layouts():
    from protocols.datasets.download import SOURCES, selected

    wdd = {f"Wearable_Dataset/{s}/S01/{f}.csv": "0" * 64 for s in ("STRESS", "AEROBIC", "ANAEROBIC")
           for f in ("ACC", "BVP", "EDA", "HR", "TEMP", "IBI", "tags")} | {"Wearable_Dataset.zip": "1" * 64}
    files, archives = selected(SOURCES["wdd"], wdd)
    assert not archives and len(files) == 15 and not any(p.endswith(("IBI.csv", "tags.csv")) for p in files)
    sci = {"csv/AP3H.csv": "0" * 64, "csv/F408.csv": "0" * 64, "raw/AP3H/x.edf": "0" * 64}
    assert sorted(selected(SOURCES["scientisst-move"], sci)[0]) == ["csv/AP3H.csv", "csv/F408.csv"]
    assert selected(SOURCES["mmash"], {"MMASH.zip": "0" * 64, "LICENSE.txt": "1" * 64}) == ({"MMASH.zip": "0" * 64}, True)


def test_unreachable_server_is_a_clear_error(tmp_path):
    with pytest.raises(DownloadError, match="SHA256SUMS.txt"):
        download("wdd", tmp_path, base="http://127.0.0.1:9", show_progress=False)
