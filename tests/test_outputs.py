"""Every output published whole and alone (common/publish.h), and traces read
in their thousands: each check runs the commands.

- Racing writers: a writer is stopped (SIGSTOP) while it holds its output's
  lock, a second writer to the same output runs meanwhile and must fail at
  once naming the first's process, removing nothing; the first then finishes
  and its output is whole.
- A kill mid-write: SIGKILL once the writer's first file is in its staging
  folder (a report; tried until one lands before it is published), and while
  gnuplot draws into it (plot): the old output stays as it was.
- A full disk: a small tmpfs mounted in a user and mount namespace (unshare)
  where the kernel allows it; else the same file-size limit with SIGXFSZ
  ignored, which fails the writes as a full disk does (the PASS line says
  which ran).
- Many shards: more shards than the descriptor limit (`ulimit -n`) read by
  report, plot, merge and verify.
Prints PASS/FAIL lines (tests/run.sh counts them).
"""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import h5py
import numpy as np

from ahatest import AHA, ROOT, aha, assert_same_trace, check, finish, kill_mid_write, same_report, tokfile

TMP = tempfile.mkdtemp(prefix="aha_outputs_")
MODEL = os.path.join(ROOT, "tests/fixtures/tiny/llama_gqa")
rng = np.random.default_rng(35)
SMALL = tokfile(os.path.join(TMP, "small.tok"), [rng.integers(0, 128, size=n).tolist() for n in (40, 30, 50, 20, 33, 45)])
MANY = tokfile(os.path.join(TMP, "many.tok"), [rng.integers(0, 128, size=int(rng.integers(20, 60))).tolist()
                                               for _ in range(120)])
TRACE = os.path.join(TMP, "small.h5")  # a few documents: a quick report
BIG = os.path.join(TMP, "many.h5")     # more: a report of it (--block 64) holds its lock long enough to stop
aha("record", MODEL, SMALL, "-o", TRACE, "--windows", "4,8", "--quiet")
aha("record", MODEL, MANY, "-o", BIG, "--windows", "4,8", "--quiet")


def lock_of(target):
    d, b = os.path.split(target.rstrip("/"))
    return os.path.join(d, "." + b + ".aha-lock")


def tree(path):
    """{relative name: sha256} of a file or of every file under a folder (hidden ones included)."""
    if os.path.isfile(path):
        return {"": hashlib.sha256(open(path, "rb").read()).hexdigest()}
    return {os.path.relpath(os.path.join(d, f), path): hashlib.sha256(open(os.path.join(d, f), "rb").read()).hexdigest()
            for d, _, fs in os.walk(path) for f in fs}


def debris(folder):
    return sorted(f for f in os.listdir(folder) if ".aha-" in f)


def stopped_holding(args, target, timeout=120):
    """./aha args, stopped (SIGSTOP) once it holds target's lock (its pid in the lock file); the Popen."""
    p = subprocess.Popen([AHA, *map(str, args)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock, deadline = lock_of(target), time.time() + timeout
    while time.time() < deadline:
        try:
            if open(lock).read().startswith(f"pid {p.pid} on "):
                p.send_signal(signal.SIGSTOP)
                return p
        except FileNotFoundError:
            pass
        if p.poll() is not None:
            raise AssertionError(f"aha {args[0]} ended (exit {p.returncode}) without its lock in {lock}: "
                                 f"{p.stderr.read().strip()}")
        time.sleep(0.0005)
    p.kill()
    raise AssertionError(f"aha {args[0]}: no lock in {lock} after {timeout} s")


def resumed(p):
    p.send_signal(signal.SIGCONT)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, f"the first writer failed after the second: {err.strip()}"
    return out, err


def race(cmd, first, second, target, same=True):
    """The first writer stopped holding target's lock, the second run meanwhile: it must fail at once
    naming the first's process, in one line, changing nothing (same: target as it was); then the first
    finishes."""
    before = tree(target) if same and os.path.exists(target) else None
    a = stopped_holding([cmd, *first], target)
    try:
        r = aha(cmd, *second, ok=False)
        assert r.returncode == 1 and f"another process (pid {a.pid} on " in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        if same:
            assert (tree(target) if os.path.exists(target) else None) == before, "the second writer changed it"
    finally:
        out, err = resumed(a)
    assert not debris(TMP), debris(TMP)
    return out


def test_race_report_plot():
    out = os.path.join(TMP, "race-report")
    race("report", [BIG, "-o", out, "--block", 64], [TRACE, "-o", out], out)
    assert json.load(open(os.path.join(out, "report.json")))["traces"][0]["files"] == [BIG], "not the first's report"
    figs = os.path.join(TMP, "race-figures")
    listed = race("plot", [BIG, "-o", figs], [TRACE, "-o", figs], figs)
    assert sorted(listed.split()) == sorted(os.path.join(figs, f) for f in os.listdir(figs) if f.endswith(".png"))
    nb = os.path.join(TMP, "race.ipynb")
    race("notebook", [BIG, "-o", nb], [TRACE, "-o", nb, "--force"], nb)
    assert "many.h5" in open(nb).read(), "not the first's notebook"


def test_race_force_trace():
    # two --force writers of one trace: the second fails before it removes anything, naming the first
    t = os.path.join(TMP, "forced.h5")
    shutil.copy(TRACE, t)
    race("record", [MODEL, MANY, "-o", t, "--force", "--windows", "4,8", "--quiet"],
         [MODEL, SMALL, "-o", t, "--force", "--windows", "4,8", "--quiet"], t, same=False)
    assert "ok (format 2, complete, 120 documents" in aha("verify", t).stdout, "not the first's trace, whole"
    # a lock held by another process (here this test, with a name it wrote): record and sweep --force, merge
    # --force and record --resume all fail naming it, and the complete trace is left byte for byte
    before = tree(t)
    import fcntl
    with open(lock_of(t), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        f.write("pid 4242 on elsewhere\n")
        f.flush()
        for args in (["record", MODEL, SMALL, "-o", t, "--force", "--windows", "4,8"],
                     ["sweep", MODEL, SMALL, "-o", t, "--force", "--windows", "4,8", "--route", "local"],
                     ["record", MODEL, MANY, "-o", t, "--resume", "--windows", "4,8"],
                     ["merge", TRACE, "-o", t, "--force"]):
            r = aha(*args, ok=False)
            assert r.returncode == 1 and "another process (pid 4242 on elsewhere) is writing this trace" in r.stderr, \
                (args[0], r.stderr)
            assert tree(t) == before and not os.path.exists(t + ".parts"), f"aha {args[0]} changed the trace"
    os.unlink(lock_of(t))


def test_fit_alone():
    out = os.path.join(TMP, "router.safetensors")
    race("fit", [MODEL, MANY, "-o", out, "--window", 4, "--quiet"],
         [MODEL, SMALL, "-o", out, "--window", 4, "--quiet", "--force"], out)
    assert os.path.getsize(out) > 0


def limited(kb, ignore, *args):
    """./aha args under `ulimit -f kb`: a write past it kills the process with SIGXFSZ, or (ignore) fails with
    EFBIG as a full disk fails with ENOSPC."""
    sh = ("trap '' XFSZ; " if ignore else "") + f'ulimit -f {kb}; exec "$0" "$@"'
    return subprocess.run(["bash", "-c", sh, AHA, *map(str, args)], cwd=ROOT, capture_output=True, text=True)


def test_kill_mid_write():
    # report -o DIR --force stopped, then SIGKILLed, once its first file is in the staging folder (tried
    # until a stop lands before the report is published): the old report stays whole, with nothing of the
    # new beside it; the next run takes over what the killed one left
    out = os.path.join(TMP, "killed-report")
    staging = os.path.join(TMP, ".killed-report.aha-tmp")
    aha("report", TRACE, "-o", out)
    whole = {}  # each source's report, as a whole report folder holds it
    for src in (BIG, TRACE):
        aha("report", src, "-o", os.path.join(TMP, "whole"), "--force")
        whole[src] = tree(os.path.join(TMP, "whole"))
    landed = 0
    for attempt in range(40):
        before = tree(out)
        src = BIG if attempt % 2 == 0 else TRACE
        assert before != whole[src], "the new report would look like the old one"
        p = subprocess.Popen([AHA, "report", src, "-o", out, "--force"], cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        while p.poll() is None and not os.path.exists(os.path.join(staging, "report.md")):
            pass
        p.send_signal(signal.SIGSTOP)
        now = tree(out)
        # stopped anywhere, the target is one report whole: the old one, or (the stop came after the
        # folders were exchanged, while the old one is removed from the staging name) the new one
        assert now in (before, whole[src]), "the report being written left a mixed folder"
        stopped = p.poll() is None and os.path.exists(os.path.join(staging, "report.md")) and now == before
        p.send_signal(signal.SIGKILL)
        p.send_signal(signal.SIGCONT)
        p.wait()
        if stopped:
            landed += 1
            assert tree(out) == before, "the killed report changed the old one"
            assert debris(TMP), "the kill left nothing behind: it did not land mid-write"
            aha("report", src, "-o", out, "--force")  # takes over the killed one's lock and staging folder
            assert json.load(open(os.path.join(out, "report.json")))["traces"][0]["files"] == [src]
            assert not debris(TMP), debris(TMP)
            if landed == 2:
                break
        else:  # the kill came after: the new report, whole
            assert json.load(open(os.path.join(out, "report.json")))["traces"][0]["files"] == [src]
    assert landed, "no kill landed mid-write in 40 tries"
    # plot -o DIR --force SIGKILLed while gnuplot draws into the staging folder: the old figures stay
    figs = os.path.join(TMP, "killed-figures")
    aha("plot", BIG, "-o", figs)
    before = tree(figs)
    p = subprocess.Popen([AHA, "plot", TRACE, "-o", figs, "--force", "--out-format", "svg"], cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    staging = os.path.join(TMP, ".killed-figures.aha-tmp")

    def drawn():
        try:
            return any(f.endswith(".svg") for f in os.listdir(staging))
        except FileNotFoundError:
            return False

    deadline = time.time() + 60
    while p.poll() is None and time.time() < deadline and not drawn():
        time.sleep(0.001)
    running = p.poll() is None
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    assert running, "plot ended before the kill"
    assert tree(figs) == before, "the killed plot changed the old figures"
    aha("plot", TRACE, "-o", figs, "--force", "--out-format", "svg")
    # the folder is replaced whole: the old PNG figures are gone, not beside the new SVG ones
    assert not any(f.endswith(".png") for f in os.listdir(figs)), sorted(os.listdir(figs))
    assert not debris(TMP), debris(TMP)


def full_disk(setup, run, check_after, extra_kb, file_kb):
    """setup(dir) makes the old output in dir; run(dir) is the aha argument list that writes it again;
    check_after(before, after, rc, stderr). In a tmpfs of the old output's size and extra_kb more, where
    one can be mounted; else with writes past file_kb KiB failing (ulimit -f, SIGXFSZ ignored)."""
    where = os.path.join(TMP, "disk")
    os.makedirs(where, exist_ok=True)
    stage = os.path.join(TMP, "disk-stage")
    shutil.rmtree(stage, ignore_errors=True)
    os.makedirs(stage)
    setup(stage)
    before = tree(stage)
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=4k tmpfs {where}"],
                           capture_output=True)
    if probe.returncode != 0:
        r = limited(file_kb, True, *run(stage))
        check_after(before, tree(stage), r.returncode, r.stderr)
        return "a file-size limit (no tmpfs could be mounted here)"
    # a page per file and folder at least, then extra_kb: room for part of the new output, not all of it
    kb = sum((os.path.getsize(os.path.join(d, f)) + 4095) // 4096 * 4 for d, _, fs in os.walk(stage) for f in fs)
    kb += 4 + extra_kb  # the lock file's page
    after = os.path.join(TMP, "disk-after")
    shutil.rmtree(after, ignore_errors=True)
    script = (f'mount -t tmpfs -o size={kb}k tmpfs "{where}" && cp -a "{stage}/." "{where}/" && '
              f'{{ "$0" "$@" 2>"{TMP}/disk-err"; echo $? >"{TMP}/disk-rc"; cp -a "{where}/." "{after}/"; }}')
    subprocess.run(["unshare", "-rm", "bash", "-c", script, AHA, *map(str, run(where))], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    check_after(before, tree(after), int(open(os.path.join(TMP, "disk-rc")).read()),
                open(os.path.join(TMP, "disk-err")).read())
    return "a full tmpfs"


def test_full_disk():
    how = []

    def unchanged(before, after, rc, err):
        assert rc == 1 and len(err.strip().splitlines()) == 1, (rc, err)
        assert after == before, f"the failed write changed the old output: {sorted(set(after) ^ set(before))}"

    # fit --force: the old router file stays (not truncated, not removed)
    how.append(full_disk(lambda d: aha("fit", MODEL, SMALL, "-o", os.path.join(d, "r.safetensors"), "--window", 4,
                                       "--quiet"),
                         lambda d: ["fit", MODEL, MANY, "-o", os.path.join(d, "r.safetensors"), "--window", 8,
                                    "--quiet", "--force"], unchanged, 0, 2))
    # report --force: the old report folder stays whole
    how.append(full_disk(lambda d: aha("report", TRACE, "-o", os.path.join(d, "rep")),
                         lambda d: ["report", BIG, "-o", os.path.join(d, "rep"), "--force"], unchanged, 24, 24))
    # plot --force: the old figures stay (gnuplot itself says nothing of a failed write: a figure cut short
    # is found by its end)
    how.append(full_disk(lambda d: aha("plot", TRACE, "-o", os.path.join(d, "figs")),
                         lambda d: ["plot", BIG, "-o", os.path.join(d, "figs"), "--force"], unchanged, 48, 24))
    # notebook --force: the old notebook and its figures stay
    how.append(full_disk(lambda d: aha("notebook", TRACE, "-o", os.path.join(d, "a.ipynb")),
                         lambda d: ["notebook", BIG, "-o", os.path.join(d, "a.ipynb"), "--force"], unchanged, 48, 24))
    print("  (the full disk: %s)" % ", ".join(sorted(set(how))))


def test_shards_past_descriptor_limit():
    # 40 shards of one run, read with 24 descriptors (about 20 free): report, plot, merge and verify open
    # each shard as it is needed; the report is the whole run's, the merge the single-process trace
    d = os.path.join(TMP, "shards")
    os.makedirs(d)
    paths = [os.path.join(d, "s%02d.h5" % i) for i in range(40)]
    for i, p in enumerate(paths):
        aha("record", MODEL, SMALL, "-o", p, "--windows", "4,8", "--shard", f"{i}/40", "--quiet")

    def low(*args):
        r = subprocess.run(["bash", "-c", 'ulimit -n 24; exec "$0" "$@"', AHA, *map(str, args)], cwd=ROOT,
                           capture_output=True, text=True)
        assert r.returncode == 0, f"aha {args[0]} with ulimit -n 24: {r.stderr.strip()}"
        return r

    whole = json.loads(aha("report", TRACE, "--out-format", "json").stdout)["traces"][0]
    got = json.loads(low("report", *paths, "--out-format", "json").stdout)["traces"][0]
    assert len(got["files"]) == 40 and got["shards"] == "" and got["shards_missing"] == 0
    for k in ("routers", "long_tail", "runs", "docs", "n_docs", "n_tokens", "decisions"):
        assert same_report(got[k], whole[k]), k + " differs between the shards and the whole run"
    low("plot", *paths, "-o", os.path.join(TMP, "shard-figures"))
    merged = os.path.join(TMP, "merged40.h5")
    low("merge", *paths, "-o", merged)
    assert_same_trace(TRACE, merged)
    assert low("verify", *paths).stdout.count(": ok (") == 40
    # more traces than one command takes: one line naming the limit and what to do
    r = aha("report", *[f"x{i}.h5" for i in range(16385)], ok=False)
    assert r.returncode == 1 and "more than 16384 traces" in r.stderr and "aha merge" in r.stderr, r.stderr[:300]


def test_percent():
    # -o with a '%' (HDF5 substitutes in a virtual dataset's file names): a record killed mid-write leaves
    # an index that reads, resumes and completes
    for name in ("a%b.h5", "100%%.h5"):
        t = os.path.join(TMP, name)
        n = kill_mid_write(["record", MODEL, MANY, "-o", t, "--windows", "4,8", "--quiet"], t, past=2, total=120)
        assert json.loads(aha("report", t, "--out-format", "json").stdout)["traces"][0]["n_docs"] == n
        aha("record", MODEL, MANY, "-o", t, "--windows", "4,8", "--quiet", "--resume")
        assert "ok (format 2, complete, 120 documents" in aha("verify", t).stdout
        assert sorted(f for f in os.listdir(TMP) if name in f) == [name], os.listdir(TMP)


def test_merge_space():
    # merge knows its output's size before it writes (about its inputs'): too little room for its peak on a
    # small tmpfs is refused at the start with the figures, nothing written; in the room it names, it merges
    where = os.path.join(TMP, "roomy")
    os.makedirs(where, exist_ok=True)
    if subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=4k tmpfs {where}"],
                      capture_output=True).returncode != 0:
        print("SKIP merge's free-space check: no tmpfs can be mounted here (unshare -rm)")
        return
    shards = [os.path.join(TMP, "room%d.h5" % i) for i in range(2)]
    for i, p in enumerate(shards):
        aha("record", MODEL, MANY, "-o", p, "--windows", "4,8", "--shard", f"{i}/2", "--quiet")
    inputs = sum(os.path.getsize(p) for p in shards)

    def merge_in(kb):
        script = f'mount -t tmpfs -o size={kb}k tmpfs "{where}" && "$0" "$@"; echo "rc=$?"; ls -A "{where}"'
        r = subprocess.run(["unshare", "-rm", "bash", "-c", script, AHA, "merge", *shards, "-o",
                            os.path.join(where, "m.h5")], cwd=ROOT, capture_output=True, text=True)
        return r.stdout.split(), r.stderr

    out, err = merge_in(2 * inputs // 1024)
    assert out == ["rc=1"] and "m.h5: merging needs about " in err and "nothing written" in err, (out, err)
    assert len(err.strip().splitlines()) == 1, err
    need_mb = float(err.split("needs about ")[1].split(" MB")[0])
    out, err = merge_in(int(need_mb * 1e6 / 1024) + 64)
    assert out[-2:] == ["rc=0", "m.h5"], (out, err)


def test_empty_path():
    for cmd in (["record", MODEL, SMALL], ["merge", TRACE], ["report", TRACE], ["plot", TRACE],
                ["notebook", TRACE], ["fit", MODEL, SMALL]):
        r = aha(*cmd, "-o", "", ok=False)
        assert r.returncode == 1 and r.stderr.strip() == 'aha: -o "": an empty path names no file', (cmd[0], r.stderr)


check("racing report, plot and notebook writers: the second fails naming the first, which finishes whole",
      test_race_report_plot)
check("two --force writers of one trace (record, sweep, merge, --resume): the second removes nothing, naming the "
      "first", test_race_force_trace)
check("racing fit writers: the second fails naming the first", test_fit_alone)
check("a writer killed mid-write leaves the old output whole; a folder is replaced whole",
      test_kill_mid_write)
check("a full disk fails fit, report, plot and notebook with one line, the old output kept", test_full_disk)
check("40 shards under ulimit -n 24: report, plot, merge, verify open each as needed", test_shards_past_descriptor_limit)
check("merge refuses at the start, with the figures, a file system without room for its peak; fits in that room",
      test_merge_space)
check("-o \"\" is one line naming -o", test_empty_path)
check("-o with '%': a killed record's index reads, resumes and completes", test_percent)
finish()
