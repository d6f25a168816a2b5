#!/usr/bin/python3
"""lbr2prof_fleet.py - many perf.data files to one profile on a Dask cluster.

Run by `lbr2prof fleet` (src/builtin/cmd_fleet.c) with Debian's
/usr/bin/python3 and python3-distributed. The work:

  map      each shard (K perf.data files) on a worker:
           lbr2prof FILES... --skip-symbolization --raw-header -o shard.raw
  reduce   a tree of `lbr2prof merge` tasks, F raw profiles each
  generate lbr2prof --unsymbolized-profile=final.raw -o OUT, once

Every file (inputs, binaries, the work directory, the output) must be at
the same path on every worker: shared storage. Dask schedules the tasks,
reruns those of a worker that dies (the scheduler's allowed-failures), and
the driver prints progress. A shard that lbr2prof cannot read (exit status
2) fails the run, naming it; with --skip-bad-inputs it is left out and
listed at the end. Merging is associative and commutative, so the output
does not depend on which worker ran what, nor in which order: it is the
profile of `lbr2prof FILES... -o OUT` over all the files (docs/fleet.md).
"""

import argparse
import logging
import os
import shutil
import subprocess
import sys
import time

PATH_OPTS = ("--binary", "--debug-binary", "--dwp")
REFUSED_OPTS = ("--skip-symbolization", "--raw-header", "--output", "-o",
                "--binaries-from-trace", "--perfscript", "--ps",
                "--unsymbolized-profile", "--up", "--llvm-sample-profile")


class BadShard(Exception):
    """lbr2prof could not read a shard (exit status 2): its files and why."""


def log(msg):
    print("fleet: " + msg, file=sys.stderr, flush=True)


# ---- the tasks (run on the workers; everything they need is an argument) ----

def run_lbr2prof(cmd):
    """(exit status, stderr) of one lbr2prof run."""
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, errors="replace", check=False)
    return p.returncode, p.stderr


def shard_task(lbr2prof, files, opts, out, skip_bad):
    """lbr2prof over one shard: {'raw': path or None, 'files', 'bad': [...],
    'error', 'seconds', 'host'}. An unreadable shard is 'error' (the driver
    fails the run, naming it), or with skip_bad left out: a shard of
    several files is then retried one file at a time so that only the
    unreadable ones are left out ('bad')."""
    t0 = time.time()
    cmd = [lbr2prof] + files + opts + ["--skip-symbolization", "--raw-header",
                                       "-o", out]
    rc, err = run_lbr2prof(cmd)
    res = {"raw": out, "files": files, "bad": [], "error": None,
           "host": os.uname()[1], "warnings": err.count("warning: ")}
    if err:
        with open(out + ".log", "w") as f:
            f.write(err)
    if rc != 0 and (rc != 2 or not skip_bad):
        res["raw"] = None
        res["error"] = ("shard %s: lbr2prof exited with %d: %s"
                        % (", ".join(files), rc, err.strip()))
    elif rc != 0:
        res["raw"], res["bad"], res["error"] = shard_one_by_one(
            lbr2prof, files, opts, out, err)
    res["seconds"] = time.time() - t0
    return res


def shard_one_by_one(lbr2prof, files, opts, out, first_err):
    """(raw or None, bad files, error) for a shard that failed: its
    readable files merged into out."""
    if len(files) == 1:
        return None, [(files[0], first_err.strip())], None
    good, bad = [], []
    for i, f in enumerate(files):
        part = "%s.%d" % (out, i)
        rc, err = run_lbr2prof([lbr2prof, f] + opts + [
            "--skip-symbolization", "--raw-header", "-o", part])
        if rc == 0:
            good.append(part)
        elif rc == 2:
            bad.append((f, err.strip()))
        else:
            return None, bad, "%s: lbr2prof exited with %d: %s" % (f, rc, err.strip())
    if not good:
        return None, bad, None
    rc, err = run_lbr2prof([lbr2prof, "merge", "-o", out] + good)
    for p in good:
        os.unlink(p)
    if rc != 0:
        return None, bad, "merging the readable files of %s: %s" % (
            ", ".join(files), err.strip())
    return out, bad, None


def merge_task(lbr2prof, parts, out):
    """lbr2prof merge of the parts that have a raw profile."""
    t0 = time.time()
    raws = [p["raw"] for p in parts if p["raw"]]
    bad = [b for p in parts for b in p["bad"]]
    res = {"raw": None, "bad": bad, "host": os.uname()[1], "files": [],
           "inputs": len(raws)}
    if len(raws) == 1:
        res["raw"] = raws[0]
    elif raws:
        rc, err = run_lbr2prof([lbr2prof, "merge", "-o", out] + raws)
        if rc != 0:
            raise RuntimeError("lbr2prof merge -o %s: %s" % (out, err.strip()))
        res["raw"] = out
    res["seconds"] = time.time() - t0
    return res


def generate_task(lbr2prof, final, opts, out):
    """The profile, once, from the sum of every shard."""
    t0 = time.time()
    if final["raw"] is None:
        raise RuntimeError("no shard could be read: nothing to generate")
    res = {"seconds": 0.0, "stderr": "", "raw": final["raw"],
           "host": os.uname()[1]}
    if out is None:
        return res
    rc, err = run_lbr2prof([lbr2prof, "--unsymbolized-profile=" + final["raw"]]
                           + opts + ["-o", out])
    if rc != 0:
        raise RuntimeError("lbr2prof --unsymbolized-profile=%s: %s"
                           % (final["raw"], err.strip()))
    res["seconds"] = time.time() - t0
    res["stderr"] = err
    return res


# ---- the driver ----

def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="lbr2prof fleet",
        description="Profile many perf.data files on a Dask cluster: shards "
        "counted by workers (--skip-symbolization --raw-header), tree-merged "
        "(lbr2prof merge), generated once. Other options (--binary, "
        "--format, --compress-recursion, ...) are lbr2prof's and go to every "
        "step.")
    ap.add_argument("inputs", nargs="*", metavar="PERF.DATA")
    ap.add_argument("-o", "--output", required=True,
                    help="the profile (or, with --raw-only, the merged raw profile)")
    ap.add_argument("--inputs-from", metavar="FILE",
                    help="more inputs, one path per line")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDR",
                       help="a running dask-scheduler, e.g. tcp://host:8786")
    where.add_argument("--scheduler-file", metavar="FILE",
                       help="the file dask-scheduler --scheduler-file wrote")
    where.add_argument("--local-workers", type=int, metavar="N",
                       help="start a local cluster of N worker processes on "
                       "127.0.0.1 (default: 2, when no scheduler is given)")
    ap.add_argument("--files-per-shard", type=int, default=1, metavar="K")
    ap.add_argument("--fan-in", type=int, default=8, metavar="F",
                    help="raw profiles per merge task (default 8)")
    ap.add_argument("--workdir", metavar="DIR",
                    help="shared directory for shard and merge outputs "
                    "(default: OUTPUT.fleet.d next to the output; removed "
                    "at the end unless --keep)")
    ap.add_argument("--keep", action="store_true", help="keep the workdir")
    ap.add_argument("--skip-bad-inputs", action="store_true",
                    help="leave unreadable inputs out (listed at the end) "
                    "instead of failing")
    ap.add_argument("--raw-only", action="store_true",
                    help="write the merged raw profile to OUTPUT, generate nothing")
    ap.add_argument("--lbr2prof", default="lbr2prof", metavar="PATH",
                    help="the lbr2prof the workers run")
    ap.add_argument("--timeout", type=float, default=0, metavar="SECONDS",
                    help="give up when the run takes longer (0: never)")
    args, rest = ap.parse_known_args(argv)
    return args, rest


def absolute_opts(rest):
    """lbr2prof's options with the paths they name made absolute (the
    workers do not run in this directory); refused ones rejected."""
    out, i = [], 0
    while i < len(rest):
        a = rest[i]
        name = a.split("=", 1)[0]
        if name in REFUSED_OPTS:
            sys.exit("lbr2prof fleet: %s: the fleet sets this itself or cannot "
                     "use it (shards must count the same binaries)" % name)
        if not a.startswith("-"):
            sys.exit("lbr2prof fleet: unexpected argument %r" % a)
        if name in PATH_OPTS:
            if "=" in a:
                a = name + "=" + os.path.abspath(a.split("=", 1)[1])
            elif i + 1 < len(rest):
                out.append(a)
                i += 1
                a = os.path.abspath(rest[i])
        out.append(a)
        i += 1
    if not any(o.split("=", 1)[0] == "--binary" for o in out):
        sys.exit("lbr2prof fleet: --binary is required (every shard must count "
                 "the same binaries)")
    return out


def read_inputs(args):
    files = list(args.inputs)
    if args.inputs_from:
        with open(args.inputs_from) as f:
            files += [l.strip() for l in f if l.strip()]
    if not files:
        sys.exit("lbr2prof fleet: no input")
    return [os.path.abspath(f) for f in files]


def connect(args):
    """(client, cluster or None)."""
    import dask
    from distributed import Client, LocalCluster
    if args.scheduler:
        return Client(args.scheduler), None
    if args.scheduler_file:
        return Client(scheduler_file=args.scheduler_file), None
    n = args.local_workers or 2
    # workers forked from the driver start in ~0.3 s where spawned ones,
    # importing everything again, take ~2.5 s (and 0.6 s to stop)
    dask.config.set({"distributed.worker.multiprocessing-method": "fork"})
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                           host="127.0.0.1", protocol="tcp", scheduler_port=0,
                           dashboard_address=None, silence_logs=logging.ERROR)
    return Client(cluster), cluster


def build_graph(client, args, files, opts, work):
    """Futures: (shards, merges, the last merge, the generation)."""
    k = max(1, args.files_per_shard)
    lb = args.lbr2prof
    shards = [client.submit(shard_task, lb, files[i:i + k], opts,
                            os.path.join(work, "shard-%05d.raw" % (i // k)),
                            args.skip_bad_inputs, key="shard-%05d" % (i // k),
                            pure=False)
              for i in range(0, len(files), k)]
    level = shards
    merges, depth = [], 0
    fan = max(2, args.fan_in)
    while len(level) > 1:
        depth += 1
        level = [client.submit(merge_task, lb, level[j:j + fan],
                               os.path.join(work, "merge-%d-%05d.raw" % (depth, j // fan)),
                               key="merge-%d-%05d" % (depth, j // fan), pure=False)
                 for j in range(0, len(level), fan)]
        merges += level
    if len(shards) == 1:        # still one merge, to name the final raw profile
        level = [client.submit(merge_task, lb, level, os.path.join(work, "final.raw"),
                               key="merge-1-00000", pure=False)]
        merges += level
    out = None if args.raw_only else os.path.abspath(args.output)
    gen = client.submit(generate_task, lb, level[0], opts, out, key="generate",
                        pure=False)
    return shards, merges, level[0], gen


def workers_line(client):
    info = client.scheduler_info()["workers"]
    try:
        pids = client.run(os.getpid)
    except Exception:           # a worker going away while we ask
        pids = {}
    return ", ".join("%s pid %s" % (a, pids.get(a, "?")) for a in sorted(info))


def progress_line(fut, res, done, total, nworkers):
    notes = []
    if fut.key.startswith("shard-"):
        notes.append(", ".join(os.path.basename(f) for f in res["files"]))
        if res["bad"]:
            notes.append("skipped: " + ", ".join(b[0] for b in res["bad"]))
        if res["warnings"]:
            notes.append("%d warnings in %s.log" % (
                res["warnings"], os.path.basename(res["raw"] or fut.key)))
    return ("[%*d/%d] %s done on %s in %.2f s%s; %d workers"
            % (len(str(total)), done, total, fut.key, res.get("host", "?"),
               res["seconds"], " (%s)" % "; ".join(notes) if notes else "",
               nworkers))


def worker_changes(client, known):
    """Log the workers that left or joined since `known` (updated)."""
    now = set(client.scheduler_info()["workers"])
    for w in sorted(known - now):
        log("worker %s lost: the scheduler reruns its tasks elsewhere" % w)
    for w in sorted(now - known):
        log("worker %s joined" % w)
    known.clear()
    known.update(now)
    return len(now)


def watch(client, futures, t0, timeout):
    """Progress lines until every future is done; the first error raised
    (an unreadable shard as BadShard)."""
    from distributed import wait
    pending, done, total = set(futures), 0, len(futures)
    known = set(client.scheduler_info()["workers"])
    while pending:
        left = timeout - (time.time() - t0) if timeout else None
        if left is not None and left <= 0:
            raise RuntimeError("timed out after %.0f s" % timeout)
        try:
            finished, pending = wait(pending, timeout=left,
                                     return_when="FIRST_COMPLETED")
        except Exception as e:
            if left is not None and type(e).__name__.endswith("TimeoutError"):
                raise RuntimeError("timed out after %.0f s" % timeout) from None
            raise
        for fut in sorted(finished, key=lambda f: f.key):
            if fut.status == "error":
                raise fut.exception()
            res = fut.result()
            if res.get("error"):
                raise BadShard(res["error"])
            done += 1
            nw = worker_changes(client, known)
            log(progress_line(fut, res, done, total, nw))


def read_stats(raw):
    """The #stats line of a raw profile, as a dict."""
    with open(raw) as f:
        for line in f:
            if line.startswith("#stats "):
                return dict(kv.split("=", 1) for kv in line.split()[1:])
            if not line.startswith("#"):
                break
    return {}


def main(argv):
    args, rest = parse_args(argv)
    opts = absolute_opts(rest)
    files = read_inputs(args)
    out = os.path.abspath(args.output)
    work = os.path.abspath(args.workdir or out + ".fleet.d")
    made_work = not os.path.isdir(work)
    os.makedirs(work, exist_ok=True)
    t0 = time.time()
    client, cluster = connect(args)
    try:
        log("%d input%s, scheduler %s; workers: %s"
            % (len(files), "s" if len(files) != 1 else "",
               client.scheduler.address, workers_line(client)))
        shards, merges, final, gen = build_graph(client, args, files, opts, work)
        log("%d shards (%d file%s each), %d merges (fan-in %d), 1 generation"
            % (len(shards), args.files_per_shard, "s" if args.files_per_shard > 1 else "",
               len(merges), args.fan_in))
        watch(client, shards + merges + [gen], t0, args.timeout)
        res_final = final.result()
        res_gen = gen.result()
        if args.raw_only:
            shutil.copyfile(res_final["raw"], out + ".tmp")
            os.replace(out + ".tmp", out)
        sys.stderr.write(res_gen["stderr"])
        report(res_final, out, time.time() - t0, len(shards))
        rc = 0
    except BadShard as e:
        log("error: %s" % e)
        log("(an unreadable input fails the run; --skip-bad-inputs leaves it out)")
        rc = 2
    except KeyboardInterrupt:
        log("interrupted")
        rc = 130
    except Exception as e:      # lbr2prof's or the engine's error
        log("error: %s: %s" % (type(e).__name__, e))
        rc = 1
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
        if not args.keep:
            clean(work, made_work)
    return rc


def report(res_final, out, seconds, nshards):
    stats = read_stats(res_final["raw"]) if res_final["raw"] else {}
    log("done in %.1f s: %d shards, %s traces, %s samples (%s used) -> %s"
        % (seconds, nshards, stats.get("traces", "?"), stats.get("samples", "?"),
           stats.get("used", "?"), out))
    if res_final["bad"]:
        log("skipped %d unreadable input%s:" % (len(res_final["bad"]),
                                               "s" if len(res_final["bad"]) > 1 else ""))
        for f, why in res_final["bad"]:
            log("  %s: %s" % (f, why.splitlines()[-1] if why else "?"))


def clean(work, made_work):
    for name in os.listdir(work) if os.path.isdir(work) else []:
        if name.startswith(("shard-", "merge-", "final.raw")):
            os.unlink(os.path.join(work, name))
    if made_work:
        try:
            os.rmdir(work)
        except OSError:
            pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
