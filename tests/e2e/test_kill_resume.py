#!/usr/bin/env python3
"""Kill a study with SIGKILL at several points, resume it each time, and check
that nothing is corrupt, no finished run is redone, and the final index and
every run's metrics equal, bit for bit, those of an uninterrupted study; stop it
with SIGTERM, SIGINT or SIGUSR1 (a checkpoint at that step, exit 5) and resume
it to the same bits, also after a second SIGINT (which ends it at once); and a checkpoint written by an earlier dpstudy (without
the keys added since) resumes. Runs trained at once in one process
(--runs_at_once) give the bits of runs trained one by one, and stop and resume
alike on a signal or an error in one of them.

usage: test_kill_resume.py WORKLOAD_EXE DPSTUDY_DATA
"""
import os
import re
import subprocess
import sys
import unittest

import h5py

from e2e_support import TempFolderTest, make_fixtures
from h5compare import assert_same_study

EXE, DATA_TOOL = sys.argv[1], sys.argv[2]
FIXTURES = None  # made in the test class's folder


def study(output, *extra, kill=None, signal=None, fail=None, oom=None, torch_error=None, backtrace=False):
    # A small MLP (51k parameters, not 670k): a checkpoint is then 0.8 MB, not 10.7,
    # and these studies write hundreds (docs/performance.md); the tests are about
    # stopping and resuming, which do not depend on the model's size.
    env = dict(os.environ)
    for k in ("DPSTUDY_TEST_KILL_AT", "DPSTUDY_TEST_KILL_SIGNAL", "DPSTUDY_TEST_KILL_RANK", "DPSTUDY_TEST_FAIL_AT",
              "DPSTUDY_TEST_OOM_AT", "DPSTUDY_TEST_TORCH_ERROR_AT", "TORCH_SHOW_CPP_STACKTRACES"):
        env.pop(k, None)
    if oom:
        env["DPSTUDY_TEST_OOM_AT"] = oom
    if torch_error:
        env["DPSTUDY_TEST_TORCH_ERROR_AT"] = torch_error
    if backtrace:
        env["TORCH_SHOW_CPP_STACKTRACES"] = "1"
    if fail:
        env["DPSTUDY_TEST_FAIL_AT"] = fail
    if kill:
        env["DPSTUDY_TEST_KILL_AT"] = kill
    if signal:
        env["DPSTUDY_TEST_KILL_SIGNAL"] = signal
    cmd = [EXE, "--data_dir", FIXTURES, "--dataset", "mnist", "--name", "kill", "--output", output,
           "--workers", "2", "--batch_size", "10", "--epochs", "2", "--sync_period", "1,4", "--seeds", "2",
           "--eval_every", "10", "--checkpoint_steps", "10", "--threads", "1", "--hidden", "64", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


class KillAndResume(TempFolderTest):
    prefix = "dpstudy-kill-test-"

    @classmethod
    def setUpClass(cls):
        global FIXTURES
        super().setUpClass()
        FIXTURES = make_fixtures(DATA_TOOL, os.path.join(cls.tmp, "data"), 600, 100)
        cls.reference = os.path.join(cls.tmp, "reference")
        r = study(cls.reference)
        assert r.returncode == 0, r.stderr

    def test_killed_study_resumes_to_the_uninterrupted_result(self):
        killed = os.path.join(self.tmp, "killed")
        logs = []
        for point in ("step:25", "checkpoint-write:2", "run-write:2", "index-write:3"):
            r = study(killed, kill=point)
            logs.append((point, r.stdout))
            self.assertEqual(r.returncode, -9, f"{point}: not killed\n{r.stdout}\n{r.stderr}")
            self.assertIn("DPSTUDY_TEST_KILL_AT: killing this process at " + point, r.stderr)
        r = study(killed)
        logs.append(("final", r.stdout))
        self.assertEqual(r.returncode, 0, r.stderr)

        # Resumed from checkpoints, and no finished run redone.
        everything = "\n".join(out for _, out in logs)
        self.assertRegex(everything, r"resuming from its checkpoint at step 20")
        finished = set()
        for point, out in logs:
            for line in out.splitlines():
                m = re.search(r"\] ([0-9a-f]{16}) .*: (starting|completed)", line)
                if not m:
                    continue
                run, what = m.groups()
                if what == "starting":
                    self.assertNotIn(run, finished, f"{run} redone after it finished ({point})")
                else:
                    finished.add(run)
        self.assertEqual(len(finished), 4)

        # Nothing corrupt or left over; everything equal to the reference.
        runs = assert_same_study(self, os.path.join(self.reference, "kill"), os.path.join(killed, "kill"))
        self.assertEqual(len(runs), 4, runs)

    def test_a_signal_stops_the_study_at_a_checkpoint_and_it_resumes_to_the_same_bits(self):
        # SIGTERM (a time limit, scancel), SIGINT (Ctrl-C), SIGUSR1 (dpstudy-slurm's
        # warning), raised at the 25th step: the run saves a checkpoint at that
        # step, nothing else starts, the study exits 5 and holds no claim.
        for signal in ("TERM", "INT", "USR1"):
            with self.subTest(signal=signal):
                out = os.path.join(self.tmp, "stopped-" + signal)
                r = study(out, kill="step:25", signal=signal)
                self.assertEqual(r.returncode, 5, r.stdout + r.stderr)
                self.assertRegex(r.stdout, rf": stopped by SIG{signal} at step 25 of 60; its checkpoint resumes it")
                self.assertIn(f"# study kill stopped by SIG{signal}: 0 of 4 runs done", r.stdout)
                self.assertEqual(r.stdout.count(": starting"), 1, r.stdout)
                runs = os.path.join(out, "kill", "runs")
                self.assertEqual(sorted(f.split(".", 1)[1] for f in os.listdir(runs)), ["ckpt.h5"])
                [ckpt] = os.listdir(runs)
                with h5py.File(os.path.join(runs, ckpt), "r+") as f:  # the part before the stop: its peak memory
                    self.assertGreater(f.attrs["peak_rss_mib"], 10)
                    f.attrs["peak_rss_mib"] = 99999.0
                r = study(out)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("resuming from its checkpoint at step 25", r.stdout)
                runs = assert_same_study(self, os.path.join(self.reference, "kill"), os.path.join(out, "kill"))
                self.assertEqual(len(runs), 4, runs)
                with h5py.File(os.path.join(out, "kill", "runs", ckpt.split(".")[0] + ".h5"), "r") as f:
                    self.assertEqual(f["summary"].attrs["peak_rss_mib"], 99999.0)  # the larger of the two parts

    def test_a_second_sigint_ends_the_process_at_once_and_a_second_sigterm_does_not(self):
        # Ctrl-C twice: the default action, no checkpoint at the stop; the run resumes
        # from its last periodic one (step 20). Batch systems may send SIGTERM twice:
        # still the clean stop, with its checkpoint at step 25.
        for signals, status, resumed_at in (("INT,INT", -2, 20), ("TERM,TERM", 5, 25)):
            with self.subTest(signals=signals):
                out = os.path.join(self.tmp, "twice-" + signals.replace(",", "-"))
                r = study(out, kill="step:25", signal=signals)
                self.assertEqual(r.returncode, status, r.stdout + r.stderr)
                self.assertEqual("stopped by SIG" in r.stdout, status == 5, r.stdout)
                r = study(out)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn(f"resuming from its checkpoint at step {resumed_at}", r.stdout)
                runs = assert_same_study(self, os.path.join(self.reference, "kill"), os.path.join(out, "kill"))
                self.assertEqual(len(runs), 4, runs)

    def test_runs_trained_at_once_give_the_bits_of_runs_trained_one_by_one(self):
        # Three threads of one process take the four runs, each the next as it
        # becomes free, every run on one thread.
        out = os.path.join(self.tmp, "at-once")
        r = study(out, "--runs_at_once", "3", "--dry_run")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("# runs at once: 3 per process, each on one thread (--runs_at_once): up to 3 in this job",
                      r.stdout)
        # The schedule places them in the process's 3 lanes: three start at once, the fourth when one is free.
        self.assertIn("# schedule: 4 runs on 1 process(es), each training 3 at once in lanes (--runs_at_once)", r.stdout)
        rows = re.findall(r"^ +\d+  [0-9a-f]{16}  0 +(\d+) +(\d+) +(\d+)$", r.stdout, re.M)
        self.assertEqual(len(rows), 4, r.stdout)
        self.assertEqual(sorted(lane for lane, start, end in rows if start == "0"), ["0", "1", "2"], r.stdout)
        self.assertEqual([start for lane, start, end in rows].count("0"), 3, r.stdout)
        self.assertIn(" per lane on the longest one", r.stdout)
        r = study(out, "--runs_at_once", "3")
        self.assertEqual(r.returncode, 0, r.stderr)
        events = re.findall(r"\] [0-9a-f]{16} .*: (starting|completed)", r.stdout)
        self.assertEqual(events[:3], ["starting"] * 3, r.stdout)  # at once: three start before one ends
        self.assertEqual(sorted(events), ["completed"] * 4 + ["starting"] * 4)
        runs = assert_same_study(self, os.path.join(self.reference, "kill"), os.path.join(out, "kill"))
        self.assertEqual(len(runs), 4, runs)
        for folder, at_once in ((out, 3), (self.reference, 1)):
            for name in runs:
                with h5py.File(os.path.join(folder, "kill", "runs", name), "r") as f:
                    self.assertEqual(f["provenance"].attrs["runs_at_once"], at_once, name)
            with h5py.File(os.path.join(folder, "kill", "index.h5"), "r") as f:  # a column to filter times on
                self.assertEqual(list(f["index/runs_at_once"][()]), [float(at_once)] * 4)
        # The estimate: each run's measured rate, three at once.
        r = study(out, "--runs_at_once", "3", "--dry_run", "--force")
        self.assertRegex(r.stdout, r"min at the [0-9]+ samples/s its 4 complete runs measured, if 3 at once keep it "
                         r"each\n")

    def test_runs_trained_at_once_stop_together_and_resume_to_the_same_bits(self):
        # A signal stops every run in progress at a checkpoint; an error in one
        # run (the 70th step of the process's, so inside the second run of
        # two) stops the other as a signal would, and the job exits 1 with it.
        for what, stop in (("signal", dict(kill="step:25", signal="TERM")), ("error", dict(fail="step:70"))):
            with self.subTest(stop=what):
                out = os.path.join(self.tmp, "at-once-" + what)
                r = study(out, "--runs_at_once", "2", **stop)
                self.assertEqual(r.returncode, 5 if what == "signal" else 1, r.stdout + r.stderr)
                cause = "SIGTERM" if what == "signal" else "an error in another run of this process"
                self.assertIn(f": stopped by {cause} at step ", r.stdout)
                if what == "error":
                    self.assertIn("error: injected failure (DPSTUDY_TEST_FAIL_AT=step:70)", r.stderr)
                runs = os.path.join(out, "kill", "runs")
                self.assertEqual(sorted(f.split(".", 1)[1] for f in os.listdir(runs)), ["ckpt.h5"] * 2)
                r = study(out, "--runs_at_once", "2")
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stdout.count("resuming from its checkpoint at step"), 2, r.stdout)
                runs = assert_same_study(self, os.path.join(self.reference, "kill"), os.path.join(out, "kill"))
                self.assertEqual(len(runs), 4, runs)

    def test_a_run_out_of_memory_beside_others_trains_again_with_fewer_at_once(self):
        # LibTorch's OutOfMemoryError, injected at the process's 30th step (a GPU's
        # allocator throws it; the CPU's has none): beside another run, the run
        # trains again once fewer train at once; alone, it is the job's error, with
        # LibTorch's message without its C++ backtrace and what to change.
        out = os.path.join(self.tmp, "at-once-oom")
        r = study(out, "--runs_at_once", "8", oom="step:30")  # as many threads as runs to do: 4
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # Beside the runs that had started by then (up to 3).
        self.assertRegex(r.stdout, r"\] [0-9a-f]{16}: out of the GPU's memory beside ([1-3]) other run\(s\); trained "
                         r"again when fewer train at once: at most \1 from now on")
        runs = assert_same_study(self, os.path.join(self.reference, "kill"), os.path.join(out, "kill"))
        self.assertEqual(len(runs), 4, runs)
        r = study(os.path.join(self.tmp, "alone-oom"), oom="step:30")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("error: injected: out of memory (DPSTUDY_TEST_OOM_AT) (give a smaller batch_size, fewer "
                      "workers per process or fewer --runs_at_once", r.stderr)
        self.assertNotIn("frame #", r.stderr)

    def test_a_libtorch_error_is_its_message_and_with_torch_show_cpp_stacktraces_its_backtrace(self):
        # An error LibTorch throws (injected at the process's 30th step, the first run's last of its first
        # epoch): its message alone, exit status 1; with TORCH_SHOW_CPP_STACKTRACES=1, as in PyTorch, its C++
        # backtrace after it. The study then resumes to the results of one never stopped. (LibTorch may warn on
        # stderr before, on some CPUs: the message is looked for, not the whole stream.)
        out = os.path.join(self.tmp, "torch-error")
        message = "dpstudy-mlp-mnist: error: injected: a LibTorch error (DPSTUDY_TEST_TORCH_ERROR_AT)\n"
        r = study(out, torch_error="step:30")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertTrue(r.stderr.endswith(message), r.stderr)
        self.assertNotIn("Exception raised from", r.stderr)
        r = study(out, torch_error="step:30", backtrace=True)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(message + "Exception raised from ", r.stderr)
        self.assertIn("frame #1:", r.stderr)
        r = study(out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        runs = assert_same_study(self, os.path.join(self.reference, "kill"), os.path.join(out, "kill"))
        self.assertEqual(len(runs), 4, runs)

    def test_a_checkpoint_of_an_earlier_dpstudy_is_resumed(self):
        # Keys added since (eval_at_sync, test_every, eval_growth, max_steps) at their old behaviour's
        # value, and the series and attributes added since (eval/synced,
        # peak_rss_mib), are missing from a checkpoint an earlier dpstudy wrote:
        # the run resumes from it all the same.
        killed = os.path.join(self.tmp, "earlier")
        r = study(killed, kill="step:25")
        self.assertEqual(r.returncode, -9, r.stderr)
        runs = os.path.join(killed, "kill", "runs")
        [ckpt] = [os.path.join(runs, f) for f in os.listdir(runs) if f.endswith(".ckpt.h5")]
        with h5py.File(ckpt, "r+") as f:
            text = f.attrs["config"]
            text = text.decode() if isinstance(text, bytes) else text
            self.assertIn("eval_at_sync=0\n", text)
            self.assertIn("eval_growth=0\n", text)
            self.assertIn("max_steps=0\n", text)
            for key in ("eval_at_sync", "test_every", "eval_growth", "max_steps"):
                text = text.replace(key + "=0\n", "")
            f.attrs["config"] = text
            del f.attrs["text_crc32"]  # edited texts: their checksum goes (else: a damaged file)
            del f["eval/synced"]
            del f.attrs["peak_rss_mib"]
        r = study(killed)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("resuming from its checkpoint at step 20", r.stdout)
        runs = assert_same_study(self, os.path.join(self.reference, "kill"), os.path.join(killed, "kill"))
        self.assertEqual(len(runs), 4, runs)

    def test_a_damaged_checkpoint_is_refused_and_the_run_starts_over(self):
        # Contents a checkpoint's sizes do not reveal (a sampler order that is not
        # its shard's, a generator state of another length, a step the run does
        # not have): the run says why it cannot resume and trains from the start,
        # to the same bits.
        def out_of_range(f):
            f["workers/1/sampler_order"][0] = 10 ** 9
            del f["workers/1/sampler_order"].attrs["crc32"]  # edited values: else a damaged file

        def repeated(f):
            order = f["workers/0/sampler_order"]
            order[1] = order[0]
            del order.attrs["crc32"]

        def short_generator(f):
            state = f["generator"][()]
            del f["generator"]
            f["generator"] = state[:-1]

        def step_past_the_end(f):
            f.attrs["step"] = 61

        def steps_since_eval_off(f):
            # The training loss of the next evaluation is the mean since the
            # last one: a count of -3 would resume into a wrong mean.
            f.attrs["steps_since_eval"] = -3

        def loss_series_short(f):
            loss = f["train/loss"][()]
            del f["train/loss"]
            f["train/loss"] = loss[:-1]

        def eval_steps_past_the_step(f):
            f["eval/step"][-1] = 26
            del f["eval/step"].attrs["crc32"]

        def elapsed_negative(f):
            f.attrs["elapsed_s"] = -1.0

        def goal_at_a_step_not_evaluated(f):
            f.attrs["steps_to_goal"] = 7

        damages = {"sampler order out of range": out_of_range, "sampler order repeats": repeated,
                   "generator state short": short_generator, "step past the end": step_past_the_end,
                   "steps since eval off": steps_since_eval_off, "loss series short": loss_series_short,
                   "eval step past the step": eval_steps_past_the_step, "elapsed negative": elapsed_negative,
                   "goal at a step not evaluated": goal_at_a_step_not_evaluated}
        for what, damage in damages.items():
            with self.subTest(damage=what):
                out = os.path.join(self.tmp, "damaged-" + what.replace(" ", "-"))
                r = study(out, kill="step:25")
                self.assertEqual(r.returncode, -9, r.stderr)
                runs = os.path.join(out, "kill", "runs")
                [ckpt] = [os.path.join(runs, f) for f in os.listdir(runs) if f.endswith(".ckpt.h5")]
                with h5py.File(ckpt, "r+") as f:
                    damage(f)
                r = study(out)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertRegex(r.stdout, r"checkpoint unusable \(.*" + re.escape(os.path.basename(ckpt)) +
                                 r".*\); starting over")
                self.assertNotIn("resuming from its checkpoint", r.stdout)
                runs = assert_same_study(self, os.path.join(self.reference, "kill"), os.path.join(out, "kill"))
                self.assertEqual(len(runs), 4, runs)

if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
