"""Sparse traffic end to end: the stored form, the sparse files, and a mapper that never densifies."""
from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from linkscope.cli import main
from linkscope.errors import UserError
from linkscope.mapping.api import map_onto
from linkscope.topology.synthetic import synthetic_topology
from linkscope.traffic.io import load_traffic, save_traffic, to_dict
from linkscope.traffic.matrix import DENSE_UP_TO, MAX_RANKS, TrafficError, TrafficMatrix, from_entries
from linkscope.traffic.synthetic import random_graph, stencil


def test_a_big_stencil_is_built_and_kept_sparse():
    t = stencil((32, 32, 32), periodic=True, size_bytes=1024)
    assert t.is_sparse and t.ranks == 32768
    assert t.talking_pairs == 6 * 32768  # six neighbours each, no N x N array anywhere
    assert t.total_bytes == 6 * 32768 * 1024
    row = t.sparse_offdiagonal_bytes().getrow(0)
    assert sorted(row.indices.tolist()) == sorted([1, 31, 32, 992, 1024, 31744])


def test_small_sparse_input_is_stored_dense_and_equals_the_dense_form():
    dense = np.array([[0, 5, 0], [1, 0, 2], [0, 0, 7]], dtype=float)
    t = TrafficMatrix(bytes=sp.csr_matrix(dense))
    assert not t.is_sparse and np.array_equal(t.bytes, dense)
    assert t.total_bytes == 8  # the diagonal is not traffic


def test_periodic_axis_of_two_sends_twice_to_one_neighbour():
    t = stencil((2, 3), periodic=True, size_bytes=10)
    assert t.bytes[0, 3] == 20 and t.messages[0, 3] == 2  # both sides of a 2-long ring are one peer


def test_random_graph_has_the_degree_asked_for():
    t = random_graph(5000, degree=16, seed=3)
    b = t.sparse_offdiagonal_bytes()
    assert t.is_sparse and np.all(np.diff(b.indptr) == 16)  # 16 distinct peers, none of them itself
    assert b.diagonal().sum() == 0
    assert random_graph(5000, degree=16, seed=3).sparse_offdiagonal_bytes().nnz == b.nnz  # reproducible


def test_dense_steps_refuse_a_sparse_job_beyond_max_ranks():
    t = from_entries(MAX_RANKS + 1, [0], [1], [5.0])
    assert t.is_sparse and t.total_bytes == 5
    with pytest.raises(TrafficError, match="stored sparse"):
        t.offdiagonal_bytes()


def test_json_writes_csr_when_smaller_and_reads_it_back(tmp_path):
    t = stencil((16, 16, 16), periodic=True)  # 4,096 ranks: sparse in memory
    data = to_dict(t)
    assert set(data["bytes"]) == {"indptr", "indices", "data"}
    path = tmp_path / "t.json"
    save_traffic(t, path)
    back = load_traffic(path)
    assert back.is_sparse and (back.bytes != t.bytes).nnz == 0 and (back.messages != t.messages).nnz == 0
    assert path.stat().st_size < 4096 * 4096  # not N x N numbers
    small = TrafficMatrix(bytes=np.ones((3, 3)))
    assert isinstance(to_dict(small)["bytes"], list)  # dense is smaller there: rows


@pytest.mark.parametrize("suffix", [".npz", ".edges"])
def test_sparse_files_round_trip(tmp_path, suffix):
    t = random_graph(DENSE_UP_TO + 100, degree=3, seed=1)
    path = tmp_path / f"t{suffix}"
    save_traffic(t, path)
    back = load_traffic(path)
    assert back.is_sparse and back.ranks == t.ranks
    assert abs(back.bytes - t.bytes).sum() == 0
    if suffix == ".edges":
        assert abs(back.messages - t.messages).sum() == 0


def test_edge_list_ranks_line_and_repeated_pairs(tmp_path):
    path = tmp_path / "t.edges"
    path.write_text("# ranks 4\n0 1 100\n0,1,50\n2 3 7\n")
    t = load_traffic(path)
    assert t.ranks == 4 and t.bytes[0, 1] == 150 and t.bytes[2, 3] == 7


@pytest.mark.parametrize(("name", "text", "needle"), [
    ("bad.edges", "0 1 x\n", "SRC DST BYTES"),
    ("bad.edges", "# ranks 2\n0 5 1\n", "names rank 5"),
    ("bad.npz", "not a zip", "not a zip"),
    ("bad.json", json.dumps({"format": "linkscope.traffic", "schema_version": 1, "ranks": 2,
                             "bytes": {"indptr": [0, 3, 1], "indices": [0], "data": [1]}}), "indptr"),
    ("bad.json", json.dumps({"format": "linkscope.traffic", "schema_version": 1, "ranks": 2,
                             "bytes": {"indptr": [0, 1, 1], "indices": [9], "data": [1]}}), "columns 0..1"),
])
def test_bad_sparse_files_are_one_line_errors(tmp_path, name, text, needle, capsys):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(UserError, match=needle):
        load_traffic(path)
    assert main(["traffic", "show", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("linkscope: error:") and "Traceback" not in err


def test_the_cluster_mapper_never_builds_a_dense_matrix(monkeypatch):
    def refuse(self):
        raise AssertionError("a dense N x N matrix was built")

    for name in ("offdiagonal_bytes", "offdiagonal_messages", "dense_bytes", "dense_messages"):
        monkeypatch.setattr(TrafficMatrix, name, refuse)
    t = stencil((4, 4, 2), periodic=True)
    a = map_onto(t, synthetic_topology("fattree:4x8"), "latency")
    assert len(a.gpu_of_rank) == 32 and a.cost <= a.default_cost


def test_captured_rows_merge_sparse_and_the_file_is_csr():
    from linkscope.traffic.capture.rows import Row, merge_rows

    n = DENSE_UP_TO + 52
    zeros = [0] * n
    rows = []
    for r in range(n):
        sent = list(zeros)
        sent[(r + 1) % n] = 4096
        count = list(zeros)
        count[(r + 1) % n] = 2
        rows.append(Row(r, n, "h", r, tuple(sent), tuple(count), (0,) * 64))
    t = merge_rows(rows, origin="captured:test")
    assert t.is_sparse and t.talking_pairs == n and t.messages[0, 1] == 2
    data = to_dict(t)
    assert set(data["bytes"]) == {"indptr", "indices", "data"} and len(data["bytes"]["data"]) == n


# ---- .npz arrays checked before SciPy's native code sees them (issue 40) ---------------------------
def _raw_npz(path, **arrays) -> None:
    import io as _io
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        for name, value in arrays.items():
            buffer = _io.BytesIO()
            np.save(buffer, value)
            archive.writestr(f"{name}.npy", buffer.getvalue())


_CSR4 = {"format": np.array(b"csr"), "shape": np.array([4, 4])}


@pytest.mark.parametrize("arrays, needle", [
    ({"indptr": np.array([0, 5, 2, 9, 3]), "indices": np.array([1, 2, 3]), "data": np.ones(3)}, "indptr"),
    ({"indptr": np.array([1, 1, 2, 3, 4]), "indices": np.array([1, 2, 3, 0]), "data": np.ones(4)}, "indptr"),
    ({"indptr": np.array([0, 1, 2, 3]), "indices": np.array([1, 2, 3]), "data": np.ones(3)}, "4-row matrix needs 5"),
    ({"indptr": np.array([0, 1, 2, 3, 4]), "indices": np.array([1, -2, 3, 0]), "data": np.ones(4)}, "found -2"),
    ({"indptr": np.array([0, 1, 2, 3, 4]), "indices": np.array([1, 7, 3, 0]), "data": np.ones(4)}, "found 7"),
    ({"indptr": np.array([0, 1, 2, 3, 4]), "indices": np.array([1, 2, 3, 0]), "data": np.ones(3)}, "but 3 values"),
    ({"indptr": np.array([0, 1, 2, 3, 4]), "indices": np.array([1, 2, 3, 0]), "data": -np.ones(4)}, "negative"),
    ({"indptr": np.array([0, 1, 2, 3, 4]), "indices": np.array([1.0, 2, 3, 0]), "data": np.ones(4)}, "whole numbers"),
])
def test_bad_npz_arrays_are_refused_not_dropped(tmp_path, arrays, needle) -> None:
    """``z_indptr_bad.npz`` crashed with "double free or corruption"; negative or out-of-range
    indices were dropped silently (3 MiB of 4 shown)."""


    _raw_npz(tmp_path / "z.npz", **_CSR4, **arrays)
    with pytest.raises(TrafficError, match=needle):
        load_traffic(tmp_path / "z.npz")


def test_coo_npz_indices_are_checked_too(tmp_path) -> None:


    _raw_npz(tmp_path / "c.npz", format=np.array(b"coo"), shape=np.array([4, 4]), row=np.array([0, 9]),
             col=np.array([1, 2]), data=np.ones(2))
    with pytest.raises(TrafficError, match="row must be ranks 0..3, found 9"):
        load_traffic(tmp_path / "c.npz")


def test_good_npz_of_each_format_reads_every_byte(tmp_path) -> None:


    dense = np.array([[0, 1, 0, 2], [3, 0, 0, 0], [0, 0, 0, 4], [5, 0, 6, 0]], dtype=float) * 2**20
    for fmt in ("csr", "csc", "coo"):
        sp.save_npz(tmp_path / f"{fmt}.npz", getattr(sp, f"{fmt}_matrix")(dense))
        assert np.array_equal(load_traffic(tmp_path / f"{fmt}.npz").dense_bytes(), dense)
