import io

import pytest

from linkscope.comm.launch import (
    CollectiveError,
    Job,
    SerialComm,
    abort_on_exception,
    agree,
    bind_gpu,
    run_collectively,
    serial_job,
)
from linkscope.errors import UserError
from linkscope.rankenv import launched_by_mpi, local_rank_from_env


def test_launcher_detection_and_local_rank():
    assert not launched_by_mpi({})
    assert launched_by_mpi({"OMPI_COMM_WORLD_SIZE": "2"})
    assert launched_by_mpi({"PMI_RANK": "0"})
    assert local_rank_from_env({"SLURM_LOCALID": "3"}) == 3
    assert local_rank_from_env({"OMPI_COMM_WORLD_LOCAL_RANK": "1", "SLURM_LOCALID": "3"}) == 1
    assert local_rank_from_env({"MPI_LOCALRANKID": "2"}) == 2
    assert local_rank_from_env({"LOCAL_RANK": "x"}) is None


def test_gpu_binding_order():
    assert bind_gpu(world_rank=5, local_rank=1, visible_gpus=4, environ={}).cuda_ordinal == 1
    assert bind_gpu(world_rank=5, local_rank=5, visible_gpus=4, environ={}).cuda_ordinal == 1
    one = bind_gpu(world_rank=3, local_rank=3, visible_gpus=1, environ={"CUDA_VISIBLE_DEVICES": "GPU-abc"})
    assert one.cuda_ordinal == 0 and "CUDA_VISIBLE_DEVICES" in one.reason
    assert bind_gpu(world_rank=1, local_rank=1, visible_gpus=4, environ={}, gpu_of_rank=[3, 2]).cuda_ordinal == 2
    with pytest.raises(UserError, match="GPU 7"):
        bind_gpu(world_rank=0, local_rank=0, visible_gpus=4, environ={}, gpu_of_rank=[7])
    with pytest.raises(UserError, match="no GPU visible"):
        bind_gpu(world_rank=0, local_rank=0, visible_gpus=0, environ={})


class TwoRankComm(SerialComm):
    """Rank 0's view of a 2-rank job whose partner reports a problem."""

    size = 2

    def __init__(self, partner_problem=None):
        self.partner_problem = partner_problem
        self.aborted = None

    def allgather(self, obj):
        return [obj, self.partner_problem]

    def Abort(self, errorcode=1):
        self.aborted = errorcode


def test_agree_raises_the_first_problem_everywhere():
    job = Job(TwoRankComm("out of memory"), 0, 2, ("a", "b"), 0)
    with pytest.raises(CollectiveError, match=r"rank 1 \(b\): out of memory"):
        agree(job, None)
    agree(Job(TwoRankComm(None), 0, 2, ("a", "b"), 0), None)


def test_unexpected_error_aborts_the_world():
    comm = TwoRankComm()
    job = Job(comm, 1, 2, ("a", "b"), 1)
    err = io.StringIO()
    with pytest.raises(RuntimeError), abort_on_exception(job, stderr=err):
        raise RuntimeError("cuda failure")
    assert comm.aborted == 1
    assert "rank 1 (b), aborting all ranks" in err.getvalue()


def test_collective_error_is_quiet_on_other_ranks():
    def body():
        raise CollectiveError("bad grid")

    with pytest.raises(SystemExit) as exc:
        run_collectively(Job(TwoRankComm(), 1, 2, ("a", "b"), 1), body)
    assert exc.value.code == 1
    with pytest.raises(CollectiveError):
        run_collectively(Job(TwoRankComm(), 0, 2, ("a", "b"), 0), body)


def test_serial_job_echo_only_data():
    out = io.StringIO()
    job = serial_job(out=out)
    job.echo("x")
    assert out.getvalue() == "x\n" and job.context()["launcher"] == "none"
