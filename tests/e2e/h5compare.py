"""Compare dpstudy HDF5 results bit for bit, metrics only (shared by the e2e tests)."""
import os

import h5py
import numpy as np

# Columns and attributes that measure time or memory or describe the invocation: not metrics.
NOT_METRICS = {"time_s", "comm_s", "time_to_goal_s", "wall_time_s", "samples_per_s", "compute_time_s", "comm_time_s", "eval_time_s",
               "peak_rss_mib", "peak_gpu_mib", "started_utc", "finished_utc", "updated_utc",
               "cuda_graphs",  # how the steps were launched, not what they computed
               "runs_at_once",  # how many runs shared the process, not what one computed
               "text_crc32"}  # the checksum of an object's texts, the times and hosts among them


def as_bytes(value):
    a = np.asarray(value)
    if a.dtype.kind == "O":  # variable-length strings: compare the text, not the pointers
        return b"\0".join(x if isinstance(x, bytes) else str(x).encode() for x in a.ravel())
    return a.tobytes()


def metrics(path):
    """Every dataset and attribute of an HDF5 file that is a metric, as bytes."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if name.startswith("provenance") or name.split("/")[-1] in NOT_METRICS:
                return
            if isinstance(obj, h5py.Dataset):
                out[name] = as_bytes(obj[()])
            for k, v in obj.attrs.items():
                if k not in NOT_METRICS:
                    out[name + "@" + k] = as_bytes(v)
        f["/"].visititems(visit)
        for k, v in f.attrs.items():
            if k not in NOT_METRICS:
                out["@" + k] = as_bytes(v)
    return out


def assert_same_study(test, reference_dir, other_dir):
    """Every run file and the index of two study folders hold the same metrics, bit for bit."""
    runs = sorted(os.listdir(os.path.join(reference_dir, "runs")))
    test.assertEqual(runs, sorted(os.listdir(os.path.join(other_dir, "runs"))))
    for name in [os.path.join("runs", r) for r in runs] + ["index.h5"]:
        a = metrics(os.path.join(reference_dir, name))
        b = metrics(os.path.join(other_dir, name))
        test.assertEqual(sorted(a), sorted(b), name)
        for key in a:
            test.assertEqual(a[key], b[key], f"{name}: {key} differs")
    return runs
