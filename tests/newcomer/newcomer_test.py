# A newcomer's path through the docs, as a test: the tutorial's OptimizedTrainer
# (optimized_trainer.py, plain PyTorch), the same adapted to dl_plan as docs/python.md shows
# (optimized_trainer_dl_plan.py) and switched to dl_loader (optimized_trainer_dl_loader.py), each
# run under the built dl-launch exactly as README.md and docs/python.md say: from another
# directory, with the workspace given relatively, the script in the workspace, and no PYTHONPATH
# (dl-launch puts dl_plan and dl_loader on the script's path itself). It checks:
#   * each run exits 0 and prints a validation accuracy; runs/<name>/plan.json and rank-0.log exist;
#   * the adapted variants are measured (the plan's workers line says "measured:");
#   * the unmodified script is never probed: started 0 times by a dry run, once by a real run,
#     in a workspace of its own and in one made by `dl-launch init` (whose python/train.py
#     imports dl_plan);
#   * a script path given relative to the current directory instead of the workspace, and
#     --resume of a run that saved nothing, are refused in one line before anything starts.
# It prints a table: variant, lines changed, wall seconds, workers measured, starts.
# Usage: newcomer_test.py --dl-launch PATH [--python /usr/bin/python3] [--dl-loader 0|1]
# Registered by tests/newcomer/CMakeLists.txt (labels "integration;python;slow").
import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT = 420
failures = []


def check(cond, what, output=""):
    if cond:
        print(f"ok    {what}")
    else:
        print(f"FAIL  {what}")
        if output:
            print("      | " + "\n      | ".join(output.rstrip().splitlines()[-25:]))
        failures.append(what)
    return cond


def lines_changed(a, b):
    with open(os.path.join(HERE, a)) as fa, open(os.path.join(HERE, b)) as fb:
        diff = difflib.unified_diff(fa.readlines(), fb.readlines(), n=0)
        added = removed = 0
        for line in diff:
            if line.startswith("+++") or line.startswith("---"):
                continue
            added += line.startswith("+")
            removed += line.startswith("-")
    return added, removed


def starts(ws):
    try:
        with open(os.path.join(ws, "starts.log")) as f:
            return sum(1 for line in f if line.startswith("start "))
    except FileNotFoundError:
        return 0


def run(cmd, cwd, env):
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=TIMEOUT)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - t0


def workers_line(stdout):
    m = re.search(r"^  workers .*$", stdout, re.M)
    return m.group(0) if m else ""


def is_measured(stdout):
    # "(measured: 0 -> 143, ...)", or "not measured: its script ... does not import dl_plan"
    return re.search(r"\(measured: ", workers_line(stdout)) is not None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dl-launch", required=True)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--dl-loader", type=int, default=1, help="0 where dl_loader was not built")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    dl_launch = os.path.abspath(args.dl_launch)
    py = args.python

    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the docs: dl-launch puts its own modules on the path
    for k in [k for k in env if k.startswith("DL_")]:
        env.pop(k)
    env["PATH"] = os.path.dirname(dl_launch) + os.pathsep + env.get("PATH", "")

    tmp = tempfile.mkdtemp(prefix="dl-newcomer-")
    home = os.path.join(tmp, "home")
    ws = os.path.join(home, "proj", "ws")
    os.makedirs(ws)
    subprocess.run([py, os.path.join(HERE, "make_images.py"), os.path.join(ws, "data")],
                   check=True, stdout=subprocess.DEVNULL)
    variants = [("plain", "optimized_trainer.py", None),
                ("dl_plan", "optimized_trainer_dl_plan.py", "optimized_trainer.py"),
                ("dl_loader", "optimized_trainer_dl_loader.py", "optimized_trainer_dl_plan.py")]
    if not args.dl_loader:
        print("note: dl_loader was not built; its variant is left out")
        variants = variants[:2]
    for _, script, _ in variants:
        shutil.copy(os.path.join(HERE, script), ws)
    train_args = ["--data", "data", "--epochs", "1", "--limit-batches", "10"]
    table = []

    # A script path relative to where the user stands, not to the workspace: one line, nothing
    # started (README: "refused in one line before anything starts").
    rc, out, err, _ = run([dl_launch, "--workspace", "proj/ws", "--", py,
                           "proj/ws/optimized_trainer.py"] + train_args, home, env)
    check(rc == 66 and out == "" and len(err.strip().splitlines()) == 1
          and "optimized_trainer.py" in err and starts(ws) == 0,
          f"script path relative to another folder: refused in one line (exit {rc})", out + err)

    # The unmodified script: a dry run starts nothing, a real run starts it once.
    rc, out, err, wall = run([dl_launch, "--workspace", "proj/ws", "--dry-run", "--", py,
                              "optimized_trainer.py"] + train_args, home, env)
    check(rc == 0 and "not measured" in workers_line(out) and starts(ws) == 0,
          f"plain, dry run: exit {rc}, not probed, started {starts(ws)} times", out + err)
    table.append(("plain (dry run)", "-", "dl-launch --dry-run", rc, wall, "no", starts(ws)))

    for name, script, base in variants:
        before = starts(ws)
        rc, out, err, wall = run([dl_launch, "--workspace", "proj/ws", "--name", name, "--",
                                  py, script] + train_args, home, env)
        started = starts(ws) - before
        measured = is_measured(out)
        ok = check(rc == 0, f"{name}: exit {rc} in {wall:.1f} s", out + err)
        ok &= check(re.search(r"validation accuracy [0-9.]+%", out) is not None,
                    f"{name}: prints its validation accuracy", out + err)
        run_dir = os.path.join(ws, "runs", name)
        check(os.path.isfile(os.path.join(run_dir, "plan.json")), f"{name}: runs/{name}/plan.json")
        log = os.path.join(run_dir, "rank-0.log")
        check(os.path.isfile(log) and "validation accuracy" in open(log).read(),
              f"{name}: runs/{name}/rank-0.log holds its output")
        if name == "plain":
            check(not measured and started == 1,
                  f"plain: not probed, started {started} time(s)", workers_line(out))
        else:
            check(measured and started > 1,
                  f"{name}: workers measured ({started - 1} probes)", workers_line(out) + "\n" + err)
        if base:
            added, removed = lines_changed(base, script)
            changed = f"+{added} -{removed} vs {base.replace('optimized_trainer', 'ot')}"
        else:
            changed = "0 (as written)"
        table.append((name, changed, "dl-launch", rc, wall, "yes" if measured else "no", started))

    # --resume of a run that saved nothing: one line, exit 66, the script not started.
    before = starts(ws)
    rc, out, err, _ = run([dl_launch, "--workspace", "proj/ws", "--name", "never", "--resume",
                           "--", py, "optimized_trainer.py"] + train_args, home, env)
    check(rc == 66 and len(err.strip().splitlines()) == 1 and "last.pt" in err
          and starts(ws) == before,
          f"--resume without last.pt: refused in one line (exit {rc}), nothing started", out + err)

    # A workspace from `dl-launch init`, whose python/train.py imports dl_plan: the unmodified
    # script beside it is still not probed (only the file after python3 opts in).
    rc, out, err, _ = run([dl_launch, "init", "ws2"], home, env)
    ws2 = os.path.join(home, "ws2")
    check(rc == 0 and os.path.isfile(os.path.join(ws2, "python", "train.py")),
          f"dl-launch init ws2: exit {rc}", out + err)
    shutil.copy(os.path.join(HERE, "optimized_trainer.py"), ws2)
    args2 = ["--data", "../proj/ws/data", "--epochs", "1", "--limit-batches", "10"]
    rc, out, err, wall = run([dl_launch, "--workspace", "ws2", "--dry-run", "--", py,
                              "optimized_trainer.py"] + args2, home, env)
    check(rc == 0 and "not measured" in workers_line(out) and starts(ws2) == 0,
          f"init workspace, plain, dry run: exit {rc}, started {starts(ws2)} times", out + err)
    table.append(("plain in init ws2 (dry run)", "0", "dl-launch --dry-run", rc, wall, "no",
                  starts(ws2)))
    rc, out, err, wall = run([dl_launch, "--workspace", "ws2", "--", py,
                              "optimized_trainer.py"] + args2, home, env)
    check(rc == 0 and re.search(r"validation accuracy [0-9.]+%", out) and starts(ws2) == 1,
          f"init workspace, plain: exit {rc}, started {starts(ws2)} time(s)", out + err)
    table.append(("plain in init ws2", "0", "dl-launch", rc, wall,
                  "yes" if is_measured(out) else "no", starts(ws2)))

    print("\n(ot = optimized_trainer; lines changed: unified diff's + and - lines, comments included)")
    print(f"{'variant':28} {'lines changed':28} {'how':20} {'exit':>4} {'wall s':>7} "
          f"{'measured':>8} {'starts':>6}")
    for v, changed, how, rc, wall, measured, n in table:
        print(f"{v:28} {changed:28} {how:20} {rc:>4} {wall:>7.1f} {measured:>8} {n:>6}")
    if args.keep:
        print(f"kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"\n{len(failures)} check(s) failed: " + "; ".join(failures))
        return 1
    print("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
