"""tools/fuzz-inputs' analyze and damaged rounds over small studies it trains first:
random dpstudy-analyze command lines, and HDF5 files damaged one edit at a time."""
import glob
import os
import re
import shutil
import subprocess
import sys

from fuzz_checker import progress_due

TRAINED = {}


def train_study(args, work):
    """Trains the small studies the analyze and damaged rounds read. Returns their folders and the command
    that trains (or resumes) each; once per round of rounds."""
    if "studies" in TRAINED:
        return TRAINED["studies"]
    data = os.path.join(args.build, "tools", "data", "dpstudy-data")
    mlp = os.path.join(args.build, "workloads", "mlp_mnist", "dpstudy-mlp-mnist")
    fixtures = os.path.join(work, "fixtures")
    subprocess.run([data, "make-fixtures", fixtures, "--train", "400", "--test", "100"], check=True,
                   capture_output=True)
    out = os.path.join(work, "results")
    common = [mlp, "--data_dir", fixtures, "--dataset", "mnist", "--batch_size", "20", "--epochs", "2",
              "--eval_every", "5", "--threads", "1", "--output", out, "--goal_error", "0.5"]
    commands = {"grid": common + ["--name", "grid", "--workers", "1,2", "--overlap", "0,0.5", "--sync_period", "1,4",
                                  "--seeds", "2", "--lr", "0.05"],
                "lr": common + ["--name", "lr", "--workers", "2", "--lr", "0.01,0.1", "--seeds", "3"],
                # A search whose slow trials end beaten (search_stop): a status of its own, which the
                # times to a goal count as censored.
                "search": [mlp, "--data_dir", fixtures, "--dataset", "mnist", "--batch_size", "10,20", "--epochs", "2",
                           "--threads", "1", "--output", out, "--goal_error", "0.5", "--name", "search", "--search",
                           "sobol", "--search_lr", "1e-3:1", "--trials", "4", "--eval_growth", "0.1", "--stop_at_goal",
                           "true", "--search_stop", "beaten"]}
    for cmd in commands.values():
        subprocess.run(cmd, check=True, capture_output=True)
    # A throughput table beside the grid's index, for `throughput` and `plot --kind scaling`.
    subprocess.run(common + ["--name", "grid", "--workers", "1,2", "--sync_period", "1,4", "--mode", "throughput",
                             "--iterations", "2", "--quiet"], check=True, capture_output=True)
    TRAINED["studies"] = [os.path.join(out, name) for name in commands], commands
    return TRAINED["studies"]


def analyze_round(args, rng, checker, work):
    analyze = os.path.join(args.build, "tools", "analyze", "dpstudy-analyze")
    dirs = train_study(args, work)[0] + [os.path.join(work, "missing")]
    cmds = ["runs", "summary", "compare", "anova", "power", "curves", "steps-to-result", "throughput", "plot", "report",
            "nope"]
    keys = ["overlap", "workers", "sync_period", "seed", "lr", "status", "study", "batch_size", "global_batch",
            "trial", "nonexistent", ""]
    metrics = ["final_test_accuracy", "test_accuracy@last=3", "test_accuracy@step=10", "test_loss@epoch=1",
               "test_accuracy@synced_last=2", "wall_time_s", "steps_to_goal", "x@y", "test_accuracy@last=", "@",
               "test_accuracy@reach=0.5", "test_loss@reach_time=1", "test_accuracy@reach=2", "test_accuracy@reach=",
               "time_to_goal_s"]
    outputs = [os.path.join(work, n) for n in ("p.png", "p.svg", "p.gp", "rep", "p.txt")]
    options = [
        lambda: ["--by", ",".join(rng.sample(keys, rng.randint(1, 3)))],
        lambda: ["--factor", rng.choice(keys)],
        lambda: ["--factors", ",".join(rng.sample(keys, rng.randint(1, 4)))],
        lambda: ["--within", rng.choice(keys)],
        lambda: ["--metric", rng.choice(metrics)],
        lambda: ["--where", rng.choice(["workers=2", "overlap>0", "seed!=1", "lr<=0.05", "x=1", "workers=", "=",
                                        "sync_period=never"])],
        lambda: ["--format", rng.choice(["table", "csv", "json", "markdown", "latex", "xml"])],
        lambda: ["--interval", rng.choice(["ci95", "sd", "sem", "range", "none", "iqr"])],
        lambda: ["--target", rng.choice(["0.5", "0.8", "1", "0", "-1", "nan"])],
        lambda: ["--kind", rng.choice(["summary", "curves", "reach", "steps", "best_lr", "scaling", "pie"])],
        lambda: ["--output", rng.choice(outputs)],
        lambda: ["--effect", rng.choice(["0.5", "1", "0", "1e9"])],
        lambda: ["--hazard_ratio", rng.choice(["2", "0.5", "1", "0", "-3", "inf", "1e300", "1.0000001"])],
        lambda: ["--equivalence", rng.choice(["0.01", "0.5", "0", "-1", "nan", "1e-300"])],
        lambda: ["--x", rng.choice(["step", "epoch", "samples", "time_s", "q"])],
        lambda: ["--series", rng.choice(["test_accuracy", "test_loss", "val_loss", "zz"])],
        lambda: ["--include_diverged"], lambda: ["--log_x"],
        lambda: ["--style", rng.choice(["bars", "band", "x"])],
    ]
    for i in range(args.analyze):
        head = [analyze, rng.choice(cmds)] + rng.sample(dirs, rng.randint(1, 2))
        chosen = [rng.choice(options)() for _ in range(rng.randint(0, 5))]
        # An option the command does not read is refused first; drop it and check the rest too, so that
        # the refusal does not keep the command's own paths unexercised.
        for _ in range(len(chosen) + 1):
            r = checker.run(head + [w for o in chosen for w in o], f"analyze {i + 1}/{args.analyze}")
            refused = re.match(r"dpstudy-analyze: error: (--\w+).*does not read it", r.stderr) if r else None
            if not refused:
                break
            chosen = [o for o in chosen if o[0] != refused.group(1)]
        if progress_due(i, args.analyze, 100):
            print(f"# analyze: {i + 1}/{args.analyze} checked, {len(checker.failures)} failed", flush=True)


ODD_NUMBERS = [float("nan"), float("inf"), -float("inf"), -1.0, 0.0, 1e300, -1e-300, 2.5]


def damage_hdf5(path, rng, h5py, np):
    """One damaging edit to the HDF5 file at path; returns what it did, in words."""
    size = os.path.getsize(path)
    op = rng.random()
    if op < 0.1:
        n = rng.randrange(size)
        with open(path, "r+b") as f:
            f.truncate(n)
        return f"truncated to {n} of {size} bytes"
    if op < 0.15:
        offsets = sorted(rng.randrange(size) for _ in range(rng.randint(1, 4)))
        with open(path, "r+b") as f:
            for o in offsets:
                f.seek(o)
                f.write(bytes([rng.randrange(256)]))
        return f"bytes overwritten at offsets {offsets}"
    with h5py.File(path, "r+") as f:
        objects = []
        f.visititems(lambda name, obj: objects.append((name, obj)))
        datasets = [n for n, o in objects if isinstance(o, h5py.Dataset)]
        groups = [n for n, o in objects if isinstance(o, h5py.Group)]
        attrs = [(n, k) for n in [""] + [n for n, _ in objects] for k in (f[n] if n else f).attrs]
        op = rng.random()
        if op < 0.15 and datasets:
            name = rng.choice(datasets)
            del f[name]
            return f"dataset {name} deleted"
        if op < 0.2 and groups:
            name = rng.choice(groups)
            del f[name]
            return f"group {name} deleted"
        if op < 0.35 and attrs:
            holder, key = rng.choice(attrs)
            del (f[holder] if holder else f).attrs[key]
            return f"attribute {holder or '/'}@{key} deleted"
        if op < 0.65 and attrs:
            holder, key = rng.choice(attrs)
            value = rng.choice([lambda: "x", lambda: "", lambda: rng.choice(ODD_NUMBERS), lambda: np.int64(-7),
                                lambda: np.array([1.0, 2.0]), lambda: np.uint8(255), lambda: "completed",
                                lambda: "diverged", lambda: 10 ** 12])()
            obj = f[holder] if holder else f
            del obj.attrs[key]
            obj.attrs[key] = value
            # Half the time the edit takes the texts' checksum with it (as a hand edit must, results/README.md),
            # so that what dpstudy checks beyond the checksum is reached too.
            if "text_crc32" in obj.attrs and key != "text_crc32" and rng.random() < 0.5:
                del obj.attrs["text_crc32"]
                return f"attribute {holder or '/'}@{key} set to {value!r}, text_crc32 deleted"
            return f"attribute {holder or '/'}@{key} set to {value!r}"
        if datasets:
            name = rng.choice(datasets)
            old = f[name]
            n = old.shape[0] if old.shape else 1
            value = rng.choice([
                lambda: np.array([rng.choice(ODD_NUMBERS) for _ in range(n)]),
                lambda: np.zeros(0, dtype=old.dtype) if old.dtype.kind != "O" else np.zeros(0),
                lambda: np.resize(old[()], max(n - rng.randint(1, 3), 0)) if old.shape else np.zeros(0),
                lambda: np.resize(old[()], n + rng.randint(1, 3)) if old.shape else np.zeros(2),
                lambda: np.array([b"x"] * n),
                lambda: np.arange(n, dtype=np.int8),
                lambda: np.zeros((n, 2)),
                lambda: np.float64(3.0),
            ])()
            del f[name]
            f[name] = value
            return f"dataset {name} replaced by {value.dtype} of shape {value.shape}"
    return "nothing (no object to damage)"


def damaged_round(args, rng, checker, work):
    try:
        import h5py
        import numpy as np
    except ImportError:
        print("# damaged: h5py is not installed: skipped", flush=True)
        return
    analyze = os.path.join(args.build, "tools", "analyze", "dpstudy-analyze")
    dirs, commands = train_study(args, work)
    grid, grid_cmd = dirs[0], commands["grid"]
    # The same study with a run killed after a checkpoint: its checkpoint file and claim stay.
    ckpt = os.path.join(work, "results-ckpt")
    ckpt_cmd = [a if a != os.path.dirname(grid) else ckpt for a in grid_cmd] + ["--checkpoint_steps", "2"]
    kill = dict(os.environ, DPSTUDY_TEST_KILL_AT="step:90")  # in the third or fourth run
    subprocess.run(ckpt_cmd, capture_output=True, env=kill)
    if not glob.glob(os.path.join(ckpt, "grid", "runs", "*.ckpt.h5")):
        sys.exit("fuzz-inputs: the study killed after a checkpoint left no checkpoint")
    reads = [["runs"], ["summary", "--by", "overlap"], ["summary", "--metric", "test_accuracy@last=2"],
             ["summary", "--metric", "test_accuracy@reach=0.5"], ["curves", "--by", "sync_period"],
             ["compare", "--factor", "overlap"], ["steps-to-result", "--target", "0.5"], ["throughput"],
             ["report", "--by", "overlap,sync_period", "--target", "0.5"]]
    for i in range(args.damaged):
        case = os.path.join(work, "damaged", str(i))
        with_ckpt = rng.random() < 0.2
        shutil.copytree(os.path.join(ckpt if with_ckpt else os.path.dirname(grid), "grid"),
                        os.path.join(case, "grid"))
        study = os.path.join(case, "grid")
        runs = sorted(glob.glob(os.path.join(study, "runs", "*.h5")))
        if with_ckpt:
            target = rng.choice([r for r in runs if ".ckpt." in r])
        else:
            target = rng.choice([os.path.join(study, "index.h5"), os.path.join(study, "throughput.h5")] +
                                runs * 3)
        what = damage_hdf5(target, rng, h5py, np)
        saved = os.path.join(work, f"damaged-{args.seed}-{i}.txt")
        with open(saved, "w", encoding="utf-8") as f:
            f.write(f"{os.path.relpath(target, case)}: {what}\n")
        label = f"damaged {i + 1}/{args.damaged} ({os.path.relpath(target, case)}: {what})"
        failed = len(checker.failures)
        for read in rng.sample(reads, 3):
            out = ["--output", os.path.join(case, "report")] if read[0] == "report" else []
            checker.run([analyze, read[0], study, *read[1:], *out], label + f", analyze {read[0]}", saved,
                        statuses=(0, 1, 2))
        if target.endswith(".h5") and "/runs/" in target and ".ckpt." not in target and rng.random() < 0.5:
            checker.run([grid_cmd[0], "--reproduce", target, "--data_dir", grid_cmd[2], "--threads", "1", "--quiet",
                         "--output", os.path.join(case, "rep")], label + ", reproduced", saved,
                        statuses=(0, 1, 2, 4))
        if rng.random() < 0.3:
            checker.run([grid_cmd[0], "--output", case, "--name", "grid", "--rebuild_index"],
                        label + ", index rebuilt", saved, statuses=(0, 1, 2))
        again = [a if a not in (os.path.dirname(grid), ckpt) else case for a in (ckpt_cmd if with_ckpt else grid_cmd)]
        r = checker.run(again, label + ", study run again", saved, statuses=(0, 1, 2))
        if r is not None and r.returncode == 0:
            # The study mended what it found: the folder reads as a whole again.
            for read in (["runs"], ["curves", "--by", "sync_period"], ["summary", "--metric", "test_accuracy@last=2"]):
                checker.run([analyze, read[0], study, *read[1:]], label + f", analyze {read[0]} after the study",
                            saved, statuses=(0,))
        if len(checker.failures) > failed:
            shutil.copytree(case, os.path.join(checker.keep, f"damaged-{args.seed}-{i}"), dirs_exist_ok=True)
        shutil.rmtree(case)
        if progress_due(i, args.damaged, 20):
            print(f"# damaged: {i + 1}/{args.damaged} checked, {len(checker.failures)} failed", flush=True)
