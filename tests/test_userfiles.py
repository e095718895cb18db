"""The one way a user's file is opened (userfiles.open_user_file and the readers over it): regular
files only, a size cap before reading, bounded decompression."""
from __future__ import annotations

import gzip
import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from linkscope.errors import UserError
from linkscope.userfiles import (
    extract_tar_bounded,
    open_user_file,
    read_bytes,
    read_text,
    read_zip_members,
    require_regular_file,
)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # no writer: a plain open() would block forever
    with pytest.raises(UserError, match="FIFO"):
        read_text(fifo, "results file")
    with pytest.raises(UserError, match="FIFO"):
        require_regular_file(fifo, "traffic file")


def test_a_device_is_refused_before_a_byte_is_read() -> None:
    with pytest.raises(UserError, match="is a device, not a regular file"):
        read_bytes(Path("/dev/zero"), "results file")


def test_a_link_to_a_device_is_refused(tmp_path: Path) -> None:
    (tmp_path / "nvml.json").symlink_to("/dev/zero")
    with pytest.raises(UserError, match="is a device"):
        read_text(tmp_path / "nvml.json", "recorded file")


def test_a_folder_and_a_missing_file_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="is a folder"):
        open_user_file(tmp_path, "topology file")
    with pytest.raises(UserError, match="not found"):
        open_user_file(tmp_path / "nope.json", "topology file")


def test_a_file_over_the_cap_is_refused_from_its_size(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with open(big, "wb") as handle:
        handle.truncate(10_000)  # sparse: nothing to read, only its size
    with pytest.raises(UserError, match="reads at most"):
        read_text(big, "results file", max_bytes=1000)
    assert read_text(big, "results file", max_bytes=20_000) == "\0" * 10_000


def test_text_keeps_universal_newlines(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"a\r\nb\rc\n")
    assert read_text(tmp_path / "a.txt", "results file") == "a\nb\nc\n"


def _tar_member_header(name: str, size_bytes: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size_bytes
    return info.tobuf(format=tarfile.GNU_FORMAT)


def test_a_tar_whose_members_expand_past_the_cap_is_refused_before_writing(tmp_path: Path) -> None:
    # a header that promises 2 GiB, and no data: refused from the header, nothing written
    archive = tmp_path / "sysfs.tar.gz"
    archive.write_bytes(gzip.compress(_tar_member_header("class/huge", 2 * 2**30) + b"\0" * 4096))
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(UserError, match="expands to more than"):
        extract_tar_bounded(archive, out, "recorded sysfs tree")
    assert list(out.iterdir()) == []


def test_a_tar_is_extracted_member_by_member_up_to_the_cap(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for k in range(3):
            info = tarfile.TarInfo(f"d/f{k}")
            info.size = 400
            tar.addfile(info, io.BytesIO(b"x" * 400))
    (tmp_path / "a.tar.gz").write_bytes(buffer.getvalue())
    (tmp_path / "ok").mkdir()
    extract_tar_bounded(tmp_path / "a.tar.gz", tmp_path / "ok", "archive", max_bytes=2000)
    assert sorted(p.name for p in (tmp_path / "ok" / "d").iterdir()) == ["f0", "f1", "f2"]
    (tmp_path / "small").mkdir()
    with pytest.raises(UserError, match="expands to more than"):
        extract_tar_bounded(tmp_path / "a.tar.gz", tmp_path / "small", "archive", max_bytes=1000)
    assert sum(p.stat().st_size for p in (tmp_path / "small").rglob("*") if p.is_file()) <= 1000


def test_a_tar_member_outside_the_folder_is_refused(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escape")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    (tmp_path / "a.tar.gz").write_bytes(buffer.getvalue())
    (tmp_path / "out").mkdir()
    with pytest.raises(UserError, match="cannot read"):
        extract_tar_bounded(tmp_path / "a.tar.gz", tmp_path / "out", "archive")
    assert not (tmp_path / "escape").exists()


def test_a_zip_is_refused_from_its_declared_sizes(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "a.npz", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("data.npy", b"\0" * 100_000)  # compresses to a few hundred bytes
    assert (tmp_path / "a.npz").stat().st_size < 2000
    with pytest.raises(UserError, match="expands to"):
        read_zip_members(tmp_path / "a.npz", "traffic file", max_bytes=50_000)
    assert len(read_zip_members(tmp_path / "a.npz", "traffic file", max_bytes=200_000)["data.npy"]) == 100_000


def test_a_zip_member_that_lies_about_its_size_is_not_expanded_past_it(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "a.npz", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("data.npy", b"\0" * 100_000)
    blob = bytearray((tmp_path / "a.npz").read_bytes())
    # shrink the declared size (local header and central directory) to 1,000 bytes
    for offset in (22, blob.rindex(b"PK\x01\x02") + 24):
        blob[offset:offset + 4] = (1000).to_bytes(4, "little")
    (tmp_path / "lie.npz").write_bytes(bytes(blob))
    with pytest.raises(UserError):
        read_zip_members(tmp_path / "lie.npz", "traffic file", max_bytes=5000)
