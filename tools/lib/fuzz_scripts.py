"""tools/fuzz-inputs' scripts round: random command lines of tools/dpstudy-slurm and
tools/fetch-datasets."""
import os

from fuzz_checker import progress_due

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout


def scripts_round(args, rng, checker, work):
    slurm, fetch = os.path.join(ROOT, "tools", "dpstudy-slurm"), os.path.join(ROOT, "tools", "fetch-datasets")
    exe = os.path.join(args.build, "workloads", "mlp_mnist", "dpstudy-mlp-mnist")
    place = os.path.join(work, "scripts")
    os.makedirs(os.path.join(place, "empty"), exist_ok=True)
    a_file = os.path.join(place, "a-file")
    with open(a_file, "w") as f:
        f.write("not a folder, not a manifest\n")
    paths = [os.path.join(place, "out"), a_file, os.path.join(a_file, "below"), "/proc/no-such", place, "",
             os.path.join(place, "my results #2 %j"), os.path.join(place, "q'uote")]
    odd = ["0", "-1", "1e308", "nan", "inf", "", " ", "abc", "1,2", "99999999999999999999", "2.5", "\u00e9", "-"]

    def pick(valid):  # mostly values that pass the parser, so that the paths behind it are reached too
        return rng.choice(valid) if rng.random() < 0.7 else rng.choice(odd)

    slurm_options = [
        lambda: ["--nodes", pick(["1", "2"])],
        lambda: ["--tasks-per-node", pick(["1", "4"])],
        lambda: ["--cpus-per-task", pick(["1", "8"])],
        lambda: ["--gpus-per-task", pick(["0", "1"])],
        lambda: ["--time", pick(["30", "04:00:00", "2-00:00:00", "UNLIMITED", "0-12", "1:2:3:4", "-5"])],
        lambda: ["--array", pick(["1", "3", "3%2", "0-3%2"])],  # the last: Slurm's own spelling, refused
        lambda: ["--partition", pick(["gpu", "a b", "#x", "q\"", "back\\slash"])],
        lambda: ["--account", pick(["proj", "a b"])],
        lambda: ["--job-name", pick(["study", "my study", "it's \"x\"", "%j"])],
        lambda: ["--output", rng.choice(paths)],
        lambda: ["--checkpoint-interval", pick(["600", "0"])],
        lambda: ["--requeue-before", pick(["120", "0", "70000"])],
        lambda: ["--max-requeues", pick(["20", "0"])],
        lambda: ["--mpi", pick(["pmix", "none", ""])],
        lambda: ["--script", rng.choice([os.path.join(place, "job.sh"), place, os.path.join(a_file, "x.sh"),
                                         "/proc/x.sh"])],
        lambda: ["--workload", rng.choice([exe, "mlp-mnist", "nope", place, a_file, ""])],
    ]
    studies = ["quickstart.ini", "thesis-mini.ini", "nope.ini", a_file, place, "", os.path.join(ROOT, "studies",
                                                                                                  "quickstart.ini")]
    after = [[], ["--", "--epochs", "1"], ["--", "--threads", "2"], ["--", "--output=x"], ["--", "--nope"],
             ["--", "--data_dir", place], ["--", "--workers", "3", "--procs_per_run", "2"]]
    mirrors = ["notaurl", "htp://x", "http://[bad", "http://127.0.0.1:1/", "file://" + os.path.join(place, "empty"),
               os.path.join(place, "empty"), a_file, "file:///proc/no-such", "", "ftp://127.0.0.1:1/x"]
    fetch_options = [
        lambda: ["--mirror", rng.choice(mirrors)],
        lambda: ["--dest", rng.choice(paths)],
        lambda: ["--manifest", rng.choice([a_file, os.path.join(place, "missing.tsv"), place,
                                           os.path.join(ROOT, "datasets", "manifest.tsv"), ""])],
        lambda: ["--timeout", pick(["1", "0.01"])],
        lambda: ["--force"],
    ]
    names = ["mnist", "fashion-mnist", "cifar10", "nope", "", "MNIST"]
    env = dict(os.environ, PATH=os.path.dirname(exe) + os.pathsep + os.environ.get("PATH", ""))
    for i in range(args.scripts):
        if rng.random() < 0.5:
            chosen = [rng.choice(slurm_options)() for _ in range(rng.randint(0, 5))]
            cmd = ([slurm, rng.choice(studies)] + [w for o in chosen for w in o] + ["--workload", exe] * (i % 3 == 0)
                   + rng.choice(after))
        else:
            chosen = [rng.choice(fetch_options)() for _ in range(rng.randint(0, 4))]
            # No network: a mirror that is refused or empty here always replaces the official addresses.
            if not any(o[0] == "--mirror" for o in chosen):
                chosen.append(["--mirror", rng.choice(mirrors)])
            if not any(o[0] == "--dest" for o in chosen):
                chosen.append(["--dest", os.path.join(place, "data")])
            cmd = [fetch] + rng.sample(names if rng.random() < 0.3 else names[:3], rng.randint(1, 2)) + \
                [w for o in chosen for w in o]
        checker.run(cmd, f"scripts {i + 1}/{args.scripts}", env=env, statuses=(0, 1, 2))
        if progress_due(i, args.scripts, 50):
            print(f"# scripts: {i + 1}/{args.scripts} checked, {len(checker.failures)} failed", flush=True)
