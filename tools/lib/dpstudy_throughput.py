"""Samples per second of one dpstudy run in throughput mode, for the speed tools
(tools/compare-pytorch, tools/compare-builds). Standard library only."""
import json
import subprocess
import sys


def samples_per_s(exe, args, steps, warmup, threads, tool):
    """The run's samples/s on the CPU: on a GPU node --device auto would time the GPU.
    Exits naming `tool` and the command when the run fails."""
    cmd = [exe, "--mode", "throughput", "--device", "cpu", "--threads", str(threads), "--iterations", str(steps),
           "--warmup_steps", str(warmup), "--quiet", "--benchmark_format=json", *args]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{tool}: {' '.join(cmd)} failed:\n{out.stderr}{out.stdout[-2000:]}")
    runs = json.loads(out.stdout[out.stdout.index("{"):])["benchmarks"]
    return runs[0]["samples_per_s"]
