"""tools/fuzz-inputs: the odd values and lines it draws, the study-file mutations, and
the Checker that runs each command and judges how it ended."""
import os
import shutil
import subprocess

ODD_VALUES = ["0", "-1", "1e308", "-0", "nan", "inf", "1e-320", "99999999999999999999", "0x10", "1,2", "never",
              "", " ", "a|b", "1 | 2", "true", "yes", "2.5", "1e3", "\u00e9", "0.0000001", "65537", "4,4",
              "1,never", "-5,5", "sgd", "cosine", "step", "linear", "medium", "coarse", "sorted", "spread",
              "group", "snip", "random", "150,225", "0.5:1", "1e-4:1", "sobol", "crop_flip", "resnet18", "8",
              "110", "1000000", "../x", "a b"]
ODD_LINES = ["[x]", "= 3", "novalue", "a = b = c", "workers = 2\nworkers = 3", "#", ";c", "[study", "exclude = =",
             "exclude = workers=3", "seeds = 0", "global_batch = 64", "global_batch = 30, 64"]


def mutate(text, rng):
    lines = text.split("\n")
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        i = rng.randrange(len(lines))
        if op < 0.5 and "=" in lines[i]:
            lines[i] = lines[i].split("=")[0] + "= " + rng.choice(ODD_VALUES)
        elif op < 0.7:
            lines.insert(i, rng.choice(ODD_LINES))
        elif op < 0.85 and "=" in lines[i]:
            lines.insert(i, lines[i])
        else:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def workload_of(text):
    for line in text.split("\n"):
        key, _, value = line.partition("=")
        if key.strip() == "workload":
            return value.split(",")[0].strip()
    return "mlp-mnist"


class Checker:
    def __init__(self, keep, timeout, verbose=False):
        self.keep, self.timeout, self.failures, self.count, self.verbose = keep, timeout, [], 0, verbose
        # Every command runs in a scratch folder: relative paths among the random
        # arguments (--output '', --output=x) write there, never into the checkout.
        self.cwd = None

    def run(self, cmd, label, saved=None, env=None, statuses=(0, 2)):
        """Runs cmd; on a failure copies `saved` (an input file) under --keep and records it.
        Returns the completed process, or None when it failed the check."""
        self.count += 1
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=self.timeout,
                               env=env, cwd=self.cwd)
        except subprocess.TimeoutExpired:
            return self.fail(label, cmd, f"ran past {self.timeout} s", saved)
        err = r.stderr
        if self.verbose:
            said = next((line for line in err.split("\n") if "error" in line), err.strip().split("\n")[-1])
            print(f"{label}: exit {r.returncode}: {said[:300]}", flush=True)
        if r.returncode < 0 and r.returncode not in statuses:
            return self.fail(label, cmd, f"killed by signal {-r.returncode}: {err[-400:]}", saved)
        if r.returncode not in statuses:
            return self.fail(label, cmd, f"exit {r.returncode}: {(r.stdout + err)[-600:]}", saved)
        if r.returncode in (1, 2) and "error" not in err:
            return self.fail(label, cmd, f"exit {r.returncode} without an error line: {err[-400:]}", saved)
        if "terminate called" in err:
            return self.fail(label, cmd, f"an exception escaped: {err[-400:]}", saved)
        if "Exception raised from" in err:
            return self.fail(label, cmd, f"a LibTorch error reached the user raw: {err[-400:]}", saved)
        if "HDF5-DIAG" in err:
            return self.fail(label, cmd, f"HDF5's error stack reached the user raw: {err[-400:]}", saved)
        if "Traceback (most recent call last)" in err:
            return self.fail(label, cmd, f"a Python exception reached the user raw: {err[-600:]}", saved)
        return r

    def fail(self, label, cmd, why, saved):
        kept = ""
        if saved:
            os.makedirs(self.keep, exist_ok=True)
            kept = os.path.join(self.keep, os.path.basename(saved))
            shutil.copy(saved, kept)
        self.failures.append((label, cmd, why, kept))
        print(f"FAILED {label}: {why}\n  {' '.join(cmd)}" + (f"\n  input kept: {kept}" if kept else ""), flush=True)
        return None


def progress_due(i, count, every):
    """Whether case i (from 0) of `count` prints the round's progress: every `every` cases, and the last."""
    return (i + 1) % every == 0 or i + 1 == count
