"""tools/fuzz-inputs' studies and layouts rounds: mutated study files checked with
--dry_run, and random run configurations trained, reproduced under mpirun, and
killed and resumed."""
import glob
import os
import subprocess
import sys

from fuzz_checker import mutate, progress_due, workload_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout


def study_round(args, rng, checker, work):
    exes = {os.path.basename(p)[len("dpstudy-"):]: p
            for p in glob.glob(os.path.join(args.build, "workloads", "*", "dpstudy-*"))
            if os.access(p, os.X_OK) and not os.path.isdir(p) and not p.endswith("-engine")}  # the front ends
    if "mlp-mnist" not in exes:
        sys.exit(f"fuzz-inputs: no workload executables under {args.build}/workloads: build first")
    studies = sorted(glob.glob(os.path.join(ROOT, "studies", "*.ini")))
    env = dict(os.environ, DPSTUDY_DATA_DIR=os.path.join(work, "no-data"))  # dry runs need no data
    for i in range(args.studies):
        source = rng.choice(studies)
        text = mutate(open(source, encoding="utf-8").read(), rng)
        path = os.path.join(work, f"study-{args.seed}-{i}.ini")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        exe = exes.get(workload_of(text), exes["mlp-mnist"])
        # Half planned for a job of another size: placements, and runs a job cannot hold.
        procs = ["--dry_run_processes", str(rng.choice([1, 2, 3, 4, 6, 8, 64]))] if rng.random() < 0.5 else []
        checker.run([exe, "--study", path, "--dry_run", "--output", os.path.join(work, "out"), *procs],
                    f"study {i + 1}/{args.studies} (from {os.path.basename(source)})", path, env)
        if progress_due(i, args.studies, 50):
            print(f"# studies: {i + 1}/{args.studies} checked, {len(checker.failures)} failed", flush=True)


# The engine's options with ordinary values; a config takes a few of them, now
# and then with one of the odd values below (which the executable must refuse
# with a message, or train).
RUN_OPTIONS = {
    "batch_size": ["4", "8", "16"], "epochs": ["1", "2", "3"], "max_steps": ["0", "5", "17"], "overlap": ["0", "0.3", "1"],
    "overlap_mode": ["pool", "spread"], "granularity": ["fine", "medium", "coarse"], "block_size": ["8", "33"],
    "order": ["shuffled", "stored", "label"], "dirichlet_alpha": ["0", "0.5", "100"],
    "shard_owner": ["worker", "group"], "sync_period": ["1", "3", "never"], "local_sgd_from_epoch": ["0", "1"],
    "group_size": ["1", "2", "4"], "group_sync_period": ["never", "1", "2"], "average_momentum": ["0", "1"],
    "average_buffers": ["0", "1"], "optimizer": ["sgd", "momentum", "nesterov"], "momentum": ["0", "0.9"],
    "weight_decay": ["0", "1e-4"], "sparsity": ["0", "0.5", "0.9"], "pruning": ["snip", "random"],
    "snip_batches": ["1", "3"], "lr": ["0.05", "0.001", "5"], "lr_scaling": ["none", "linear", "sqrt"],
    "lr_base_batch": ["0", "32"], "warmup_epochs": ["0", "1", "0.5"], "warmup_start": ["zero", "base"],
    "schedule": ["constant", "step", "cosine", "linear"], "lr_milestones": ["1", "1,2"],
    "lr_end_factor": ["0", "0.1"], "lr_decay_steps": ["0", "3"], "eval_every": ["0", "1", "3"],
    "eval_growth": ["0", "0.05", "1"], "eval_at_sync": ["0", "1"], "validation_fraction": ["0", "0.1", "0.5"], "test_every": ["0", "2"],
    "goal_error": ["0", "0.5", "0.9"], "stop_at_goal": ["0", "1"], "seed": ["1", "2", "7"],
    "data_seed": ["-1", "3"], "eval_batch": ["1000", "7"],
}
ODD_RUN_VALUES = {
    "batch_size": ["0", "1000", "1"], "overlap": ["1.5", "-0.1"], "block_size": ["1", "1000"],
    "dirichlet_alpha": ["0.001"], "sync_period": ["1000", "0"], "local_sgd_from_epoch": ["5"],
    "group_size": ["3", "8"], "group_sync_period": ["1000"], "momentum": ["0.999", "1"],
    "weight_decay": ["0.5"], "sparsity": ["0.999", "1"], "snip_batches": ["0", "1000"], "lr": ["1e6", "0"],
    "batch_lr_ratio": ["160", "1e-9"], "warmup_epochs": ["10"], "lr_milestones": ["0", "2,1", "100"],
    "lr_decay_steps": ["100000"], "validation_fraction": ["0.99"], "test_every": ["1"], "eval_batch": ["1"],
    "eval_growth": ["-0.5", "11", "nan"], "max_steps": ["-1", "1", "100000"],
}


def run_options(rng):
    options = ["--batch_size", rng.choice(RUN_OPTIONS["batch_size"])]
    for key in rng.sample(sorted(set(RUN_OPTIONS) - {"batch_size"}), rng.randint(3, 10)):
        odd = ODD_RUN_VALUES.get(key)
        options += ["--" + key, rng.choice(odd if odd and rng.random() < 0.15 else RUN_OPTIONS[key])]
    return options


# executable, its dataset, the options it always gets (small models for speed), weight
WORKLOADS = [("mlp_mnist/dpstudy-mlp-mnist", "mnist", ["--hidden", "32"], 6),
             ("simple_cnn/dpstudy-simple-cnn", "mnist", [], 2),
             ("resnet8_cifar10/dpstudy-resnet8-cifar10", "cifar10", [], 1),
             ("resnet_cifar10/dpstudy-resnet-cifar10", "cifar10", ["--depth", "8", "--augment", "crop_flip"], 2)]


def layouts_round(args, rng, checker, work):
    data = os.path.join(args.build, "tools", "data", "dpstudy-data")
    fixtures = os.path.join(work, "layout-fixtures")
    subprocess.run([data, "make-fixtures", fixtures, "--train", "256", "--test", "64"], check=True,
                   capture_output=True)
    # Open MPI as root, yielding beside other tests under ctest -j2, and more processes than
    # cores (Open MPI 4, then 5): variables, which other MPIs ignore, not flags they refuse.
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_mpi_yield_when_idle="1", OMPI_MCA_rmaps_base_oversubscribe="1",
               PRTE_MCA_rmaps_default_mapping_policy=":oversubscribe")
    mlp = os.path.join(args.build, "workloads", WORKLOADS[0][0])
    with_mpi = " mpi on" in subprocess.run([mlp, "--version"], capture_output=True, text=True).stdout
    mpiexec = args.mpiexec if with_mpi else ""
    if args.mpiexec and not with_mpi:
        print("# layouts: this build has no MPI: trained in one process only, not compared", flush=True)
    compared = resumed = 0
    for i in range(args.layouts):
        exe, dataset, fixed, _ = rng.choices(WORKLOADS, weights=[w[3] for w in WORKLOADS])[0]
        exe = os.path.join(args.build, "workloads", exe)
        workers = rng.choice(["1", "2", "4", "8", "8"])
        options = run_options(rng)
        out = os.path.join(work, "layouts")
        cmd = [exe, "--data_dir", fixtures, "--dataset", dataset, "--workers", workers, *fixed, *options,
               "--threads", "1", "--quiet", "--output", out, "--name", f"c{i}"]
        saved = os.path.join(work, f"layouts-{args.seed}-{i}.sh")
        with open(saved, "w", encoding="utf-8") as f:
            f.write(" ".join(cmd) + "\n")
        label = f"layouts {i + 1}/{args.layouts} ({os.path.basename(exe)})"
        r = checker.run(cmd, label, saved, env)
        runs = glob.glob(os.path.join(out, f"c{i}", "runs", "*.h5"))
        if r is not None and r.returncode == 0 and int(workers) >= 2 and mpiexec and len(runs) == 1:
            procs = rng.choice([p for p in (2, 4) if int(workers) % p == 0])
            threads = rng.choice(["1", "2"])  # the reference's workers stepped side by side: any count
            with open(saved, "a", encoding="utf-8") as f:
                f.write(f"# then under {procs} processes of {threads} threads: --reproduce {runs[0]}\n")
            checker.run([mpiexec, "-np", str(procs), exe, "--reproduce", runs[0],
                         "--data_dir", fixtures, "--threads", threads, "--quiet",
                         "--output", os.path.join(work, "rep")],
                        label + f", reproduced on {procs} processes of {threads} threads", saved, env, statuses=(0,))
            compared += 1
        if r is not None and r.returncode == 0 and len(runs) == 1 and rng.random() < 0.5:
            resumed += resume_check(exe, cmd, fixtures, label, saved, env, rng, checker, work, i)
        if progress_due(i, args.layouts, 20):
            print(f"# layouts: {i + 1}/{args.layouts} trained, {compared} compared across processes, "
                  f"{resumed} killed and resumed from a checkpoint, {len(checker.failures)} failed", flush=True)


def resume_check(exe, cmd, fixtures, label, saved, env, rng, checker, work, i):
    """Trains the config again, killed (SIGKILL) or stopped (SIGTERM) at a step after a checkpoint, resumes it,
    and has --reproduce compare the resumed run with one trained straight through. Returns 1 if it resumed from a
    checkpoint (the stop may come before the first)."""
    out = os.path.join(work, "resumed")
    extra = ["--checkpoint_steps", str(rng.randint(1, 2))]
    # Not quiet: the resume's line is counted.
    again = [a if a != os.path.join(work, "layouts") else out for a in cmd if a != "--quiet"] + extra
    signal, step = rng.choice(["KILL", "TERM"]), rng.randint(2, 5)
    with open(saved, "a", encoding="utf-8") as f:
        f.write(f"# then to {out} without --quiet, with {' '.join(extra)}: SIG{signal} at step {step}, resumed\n")
    kill = dict(env, DPSTUDY_TEST_KILL_AT=f"step:{step}")
    if signal == "TERM":
        kill["DPSTUDY_TEST_KILL_SIGNAL"] = signal  # unset: SIGKILL
    stopped = checker.run(again, label + f", SIG{signal} at step {step}", saved, kill, statuses=(0, -9, 5))
    if stopped is None or stopped.returncode == 0:  # fewer steps than that: nothing to resume
        return 0
    resumed = checker.run(again, label + ", resumed", saved, env, statuses=(0,))
    if resumed is None:
        return 0
    [run] = glob.glob(os.path.join(out, f"c{i}", "runs", "*.h5"))
    checker.run([exe, "--reproduce", run, "--data_dir", fixtures, "--threads", "1", "--quiet",
                 "--output", os.path.join(work, "rep")], label + ", resumed run against one straight through",
                saved, env, statuses=(0,))
    return 1 if "resuming from its checkpoint" in resumed.stdout else 0  # else it started over
