"""Beyond one machine: --shard auto under simulated launchers, a Slurm job
array's (and a sweep's) shards merged, and mpirun (loopback only) writing one trace equal to
the single-process one, a failed and a killed rank, and --resume completing
them. The mpirun checks print SKIP lines (counted by tests/run.sh) where
mpirun or build/mpi/libaha_mpi.so is missing. Prints PASS/FAIL lines."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

import h5py
import numpy as np

from ahatest import AHA, ROOT, aha, attr_str, assert_same_trace, check, durable_docs, finish, tokfile, without_doc_index

TMP = tempfile.mkdtemp(prefix="aha_mpi_")
MODEL = os.path.join(ROOT, "tests/fixtures/tiny/llama_gqa")
COMMON = ["--route", "random:0.3", "--window", 4, "--windows", "4,8", "--ctx", 32, "--mass", "--quiet",
          "--threads", 1]
RNG = np.random.default_rng(14)
DOCS = [RNG.integers(0, 128, size=n).tolist() for n in (70, 300, 90, 40, 33, 64, 12)]  # shard 1/3: 12 contexts
DATA = tokfile(os.path.join(TMP, "docs.tok"), DOCS)
MPIRUN = shutil.which("mpirun")
MPILIB = os.path.join(ROOT, "build/mpi/libaha_mpi.so")
# loopback only, as root too, more ranks than cores; no core binding (OpenMP decides)
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_hwloc_base_binding_policy": "none"}
LAUNCHERS = ("SLURM", "OMPI_", "PMI_", "PMIX_", "MPI_LOCALRANKID")
BASE_ENV = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHERS)}


def aha_env(env, *args):
    return subprocess.run([AHA, *map(str, args)], capture_output=True, text=True, cwd=ROOT, env={**BASE_ENV, **env})


def mpirun(n, *args, wrap=None):
    """mpirun -n N ./aha ARGS; wrap: a shell line that runs "$@" (the aha command)."""
    cmd = [AHA, *map(str, args)]
    if wrap:
        cmd = ["sh", "-c", wrap, "sh", *cmd]
    return subprocess.Popen([MPIRUN, "--oversubscribe", "-n", str(n), *cmd], cwd=ROOT, env={**BASE_ENV, **MPI_ENV},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def whole():
    """The single-process trace of DATA, recorded once."""
    path = os.path.join(TMP, "whole.h5")
    if not os.path.exists(path):
        aha("record", MODEL, DATA, "-o", path, *COMMON)
    return path


def test_shard_auto():
    out = os.path.join(TMP, "auto-%i-of-%n.h5")
    cases = [({"SLURM_ARRAY_TASK_ID": "12", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "10"}, 2, 3),
             ({"SLURM_PROCID": "1", "SLURM_NTASKS": "2"}, 1, 2),
             ({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "4", "AHA_MPI_LIB": "/nonexistent"}, 0, 4)]
    for env, i, n in cases:
        r = aha_env(env, "record", MODEL, DATA, "-o", out, "--shard", "auto", "--max-docs", 2, "--windows", 4,
                    "--ctx", 32, "--threads", 1)
        assert r.returncode == 0, r.stderr
        assert f"--shard auto: shard {i}/{n}" in r.stderr, r.stderr
        path = os.path.join(TMP, f"auto-{i}-of-{n}.h5")
        with h5py.File(path, "r") as f:
            assert attr_str(f.attrs["shard"]) == f"{i}/{n}", f.attrs["shard"]
    r = aha_env({}, "record", MODEL, DATA, "-o", out, "--shard", "auto")
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "--shard auto: no launcher in the environment" in r.stderr, r.stderr
    r = aha_env({"SLURM_PROCID": "1", "SLURM_NTASKS": "2"}, "record", MODEL, DATA, "-o", os.path.join(TMP, "one.h5"),
                "--shard", "auto")
    assert r.returncode == 1 and "every shard needs its own file: put %i in it" in r.stderr, r.stderr
    # an mpirun of an aha without the MPI library: one error, not N ranks writing one file
    r = aha_env({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "AHA_MPI_LIB": "/nonexistent"},
                "record", MODEL, DATA, "-o", os.path.join(TMP, "one.h5"))
    assert r.returncode == 1 and "this aha was built without MPI" in r.stderr, r.stderr


def test_slurm_array():
    parts = []
    for task in range(3):  # what sbatch --array=0-2 gives each task
        env = {"SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "0"}
        r = aha_env(env, "record", MODEL, DATA, "-o", os.path.join(TMP, "array-%i.h5"), "--shard", "auto", *COMMON)
        assert r.returncode == 0, r.stderr
        parts.append(os.path.join(TMP, f"array-{task}.h5"))
    # a rerun with --resume leaves a finished task's shard as it is, and succeeds
    env = {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "0"}
    before = os.stat(parts[1]).st_mtime_ns
    r = aha_env(env, "record", MODEL, DATA, "-o", os.path.join(TMP, "array-%i.h5"), "--shard", "auto", "--resume",
                *[x for x in COMMON if x != "--quiet"])
    assert r.returncode == 0 and "complete, nothing left to record" in r.stderr, r.stderr
    assert os.stat(parts[1]).st_mtime_ns == before
    merged = os.path.join(TMP, "array.h5")
    r = aha("merge", *parts, "-o", merged)
    assert "doc_index" not in r.stderr, r.stderr
    assert_same_trace(whole(), merged)
    # shards written before doc_index still merge, in the order given, and say so in one line;
    # that order (shard 0's documents, then 1's, ...) is not the single-process trace
    old = [without_doc_index(p, os.path.join(TMP, f"old-{i}.h5")) for i, p in enumerate(parts)]
    r = aha("merge", *old, "-o", os.path.join(TMP, "old.h5"))
    assert r.stderr.count("\n") == 1 and "3 of the 3 traces have no doc_index" in r.stderr, r.stderr
    with h5py.File(os.path.join(TMP, "old.h5"), "r") as f:
        assert list(f["doc_index"][...]) == [-1] * int(f.attrs["n_docs"]), "not known: -1"
    try:
        assert_same_trace(whole(), os.path.join(TMP, "old.h5"))
    except AssertionError as e:
        assert "dataset" in str(e) and "differs" in str(e), e
    else:
        raise AssertionError("the shard-major order passed the field-by-field check")


def test_sweep_shards():
    grid = ["--windows", "4,8", "--policies", "oracle:0.1 random:0.3 local", "--ctx", 32, "--quiet", "--threads", 1]
    single = os.path.join(TMP, "sweep.h5")
    aha("sweep", MODEL, DATA, "-o", single, *grid)
    parts = [os.path.join(TMP, f"sweep-{i}.h5") for i in range(2)]
    for i, p in enumerate(parts):
        aha("sweep", MODEL, DATA, "-o", p, "--shard", f"{i}/2", *grid)
    merged = os.path.join(TMP, "sweep-merged.h5")
    aha("merge", *reversed(parts), "-o", merged)
    assert_same_trace(single, merged)


def mpi_missing():
    """Why the mpirun checks cannot run here, or None."""
    if not MPIRUN:
        return "mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"
    if not os.path.exists(MPILIB):
        return "build/mpi/libaha_mpi.so not built (make found no mpicc, or MPI=0)"
    return None


def mpi_check(name, fn):
    why = mpi_missing()
    if why:
        print("SKIP", name + ":", why)
    else:
        check(name, fn)


def test_mpirun():
    out = os.path.join(TMP, "job.h5")
    p = mpirun(3, "record", MODEL, DATA, "-o", out, *COMMON)
    so, se = p.communicate(timeout=120)
    assert p.returncode == 0, se
    assert "merged 3 shards into " + out in so, so
    for i in range(3):
        with h5py.File(os.path.join(TMP, f"job.shard-{i}-of-3.h5"), "r") as f:
            assert attr_str(f.attrs["shard"]) == f"{i}/3" and f.attrs["complete"] == 1
    assert_same_trace(whole(), out)
    # the trace exists: refused once, naming it, before any rank records
    p = mpirun(3, "record", MODEL, DATA, "-o", out, *COMMON)
    so, se = p.communicate(timeout=120)
    assert p.returncode != 0 and se.count(out + ": exists") == 1, se


def test_failed_rank():
    out = os.path.join(TMP, "fail.h5")
    bad = os.path.join(TMP, "fail.shard-1-of-3.h5")
    with open(bad, "w") as f:
        f.write("not a trace\n")  # rank 1 fails with one error line
    p = mpirun(3, "record", MODEL, DATA, "-o", out, *COMMON)
    so, se = p.communicate(timeout=120)
    assert p.returncode != 0 and not os.path.exists(out), se
    want = f"aha: rank 1 of 3: {bad}: exists and is not a trace this build reads"
    assert se.count(want) == 1 and "1 of 3 ranks failed" in se and "--resume" in se, se
    for i in (0, 2):  # the finished shards stay
        with h5py.File(os.path.join(TMP, f"fail.shard-{i}-of-3.h5"), "r") as f:
            assert f.attrs["complete"] == 1
    os.remove(bad)
    done = {i: os.stat(os.path.join(TMP, f"fail.shard-{i}-of-3.h5")).st_mtime_ns for i in (0, 2)}
    p = mpirun(3, "record", MODEL, DATA, "-o", out, "--resume", *COMMON)
    so, se = p.communicate(timeout=120)
    assert p.returncode == 0, se
    for i, t in done.items():  # only what was missing was recorded
        assert os.stat(os.path.join(TMP, f"fail.shard-{i}-of-3.h5")).st_mtime_ns == t, i
    assert_same_trace(whole(), out)


def test_killed_rank():
    out = os.path.join(TMP, "kill.h5")
    shard1 = os.path.join(TMP, "kill.shard-1-of-3.h5")
    pid1 = os.path.join(TMP, "kill.pid")
    # rank 1 says its pid (exec keeps it) and is killed once a context of its 12 is durable
    wrap = f'[ "$OMPI_COMM_WORLD_RANK" = 1 ] && echo $$ > {pid1}; exec "$@"'
    p = mpirun(3, "record", MODEL, DATA, "-o", out, *COMMON, wrap=wrap)
    deadline = time.time() + 60
    while time.time() < deadline and not (os.path.exists(pid1) and (durable_docs(shard1) or 0) >= 1):
        time.sleep(0.02)
    killed = durable_docs(shard1)
    os.kill(int(open(pid1).read()), signal.SIGKILL)
    so, se = p.communicate(timeout=120)
    assert p.returncode != 0 and not os.path.exists(out), (p.returncode, se)
    assert "rank 1" in se and "signal 9" in se, se  # mpirun names the killed rank
    with h5py.File(shard1, "r") as f:
        assert f.attrs["complete"] == 0 and killed >= 1, (f.attrs["complete"], killed)
    p = mpirun(3, "record", MODEL, DATA, "-o", out, "--resume", *[x for x in COMMON if x != "--quiet"])
    so, se = p.communicate(timeout=120)
    assert p.returncode == 0 and f"resuming {shard1} after" in se, se
    assert_same_trace(whole(), out)


def test_more_ranks_than_documents():
    # mpirun -n 4 on 3 documents: rank 3's shard holds none, a complete shard; the job writes the merged
    # trace, the single-process one; a --resume rerun compares every shard and leaves them as they are
    data = tokfile(os.path.join(TMP, "three.tok"), DOCS[:3])
    single = os.path.join(TMP, "three.h5")
    aha("record", MODEL, data, "-o", single, *COMMON)
    out = os.path.join(TMP, "three-job.h5")
    p = mpirun(4, "record", MODEL, data, "-o", out, *COMMON)
    so, se = p.communicate(timeout=120)
    assert p.returncode == 0 and "merged 4 shards into " + out in so, se
    with h5py.File(os.path.join(TMP, "three-job.shard-3-of-4.h5"), "r") as f:
        assert (f.attrs["complete"], f.attrs["n_docs"]) == (1, 0)
    assert_same_trace(single, out)
    p = mpirun(4, "record", MODEL, data, "-o", out, "--resume", *[x for x in COMMON if x != "--quiet"])
    so, se = p.communicate(timeout=120)
    assert p.returncode == 0 and se.count("complete, nothing left to record") == 4, se
    assert_same_trace(single, out)


check("shard auto: Slurm array, srun, Open MPI simulated; -o %i/%n; no launcher, one file, no MPI library", test_shard_auto)
check("Slurm job array (simulated): 3 tasks' shards, a --resume rerun, merged = the single-process trace (no "
      "reordering); shards without doc_index merge in shard order, said in one line, which that check refuses",
      test_slurm_array)
check("aha sweep --shard: the shards merged (given in reverse) are the single-process sweep trace", test_sweep_shards)
mpi_check("mpirun -n 3: one trace equal to the single-process trace field by field", test_mpirun)
mpi_check("mpirun: a failed rank fails the job with its line; --resume records only the missing shard", test_failed_rank)
mpi_check("mpirun: a SIGKILLed rank fails the job; --resume completes it to the same trace", test_killed_rank)
mpi_check("mpirun -n 4 on 3 documents: the empty shard is complete and the job writes the single-process trace; "
          "a --resume rerun compares and keeps the shards", test_more_ranks_than_documents)
finish()
