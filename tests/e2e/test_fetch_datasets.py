#!/usr/bin/env python3
"""tools/fetch-datasets against a real HTTP server on 127.0.0.1 serving generated files.

usage: test_fetch_datasets.py DPSTUDY_DATA FETCH_DATASETS
"""
import functools
import gzip
import hashlib
import http.server
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import unittest

DATA_TOOL, FETCH = sys.argv[1], sys.argv[2]


class Handler(http.server.SimpleHTTPRequestHandler):
    requests = []

    def log_message(self, *args):  # keep the test output to what matters
        pass

    def do_GET(self):
        Handler.requests.append(self.path)
        super().do_GET()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def read(path):
    with open(path, "rb") as f:
        return f.read()


class FetchDatasets(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="dpstudy-fetch-test-")
        fixtures = os.path.join(cls.tmp, "fixtures")
        subprocess.run([DATA_TOOL, "make-fixtures", fixtures, "--train", "50", "--test", "10"],
                       check=True, stdout=subprocess.DEVNULL)
        # What the server offers: MNIST as .gz files, CIFAR-10 as the official
        # tarball layout. 'good' is faithful, 'bad' has one flipped byte in a
        # decompressed MNIST file, 'recompressed' has every .gz at another level.
        cls.serve = os.path.join(cls.tmp, "www")
        rows = []
        cls.truth = {}  # (dataset, file) -> SHA-256 of the fixture's decompressed bytes
        for variant in ("good", "bad", "recompressed"):
            os.makedirs(os.path.join(cls.serve, variant))
        for f in sorted(os.listdir(os.path.join(fixtures, "mnist"))):
            with gzip.open(os.path.join(fixtures, "mnist", f)) as g:
                raw = g.read()
            name = f[:-3]
            rows.append(("mnist", name, len(raw), sha256(raw), f, "-"))
            cls.truth[("mnist", name)] = sha256(raw)
            corrupt = bytearray(raw)
            if name == "train-images-idx3-ubyte":
                corrupt[500] ^= 0xFF
            for variant, data, level in (("good", raw, 9), ("bad", bytes(corrupt), 9),
                                         ("recompressed", raw, 1)):
                with gzip.open(os.path.join(cls.serve, variant, f), "wb", compresslevel=level) as out:
                    out.write(data)
        tar_path = os.path.join(cls.serve, "good", "cifar-10-binary.tar.gz")
        with tarfile.open(tar_path, "w:gz") as tar:
            for f in sorted(os.listdir(os.path.join(fixtures, "cifar10"))):
                tar.add(os.path.join(fixtures, "cifar10", f), arcname="cifar-10-batches-bin/" + f)
        tar_md5 = hashlib.md5(read(tar_path)).hexdigest()
        for f in sorted(os.listdir(os.path.join(fixtures, "cifar10"))):
            raw = read(os.path.join(fixtures, "cifar10", f))
            cls.truth[("cifar10", f)] = sha256(raw)
            # One file with only the archive MD5 recorded: the other verification path.
            digest = "-" if f == "data_batch_2.bin" else sha256(raw)
            rows.append(("cifar10", f, len(raw), digest, "cifar-10-binary.tar.gz", tar_md5))
        cls.expected = {(r[0], r[1]): r for r in rows}
        cls.manifest = os.path.join(cls.tmp, "manifest.tsv")
        with open(cls.manifest, "w") as m:
            m.write("# test manifest\n")
            for r in rows:
                m.write("\t".join(map(str, r)) + "\thttp://127.0.0.1:1/unused/\n")
        handler = functools.partial(Handler, directory=cls.serve)
        cls.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        cls.base = f"http://127.0.0.1:{cls.server.server_address[1]}"
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def fetch(self, dest, *args, variant="good"):
        cmd = [sys.executable, FETCH, *args, "--mirror", f"{self.base}/{variant}/",
               "--dest", dest, "--manifest", self.manifest, "--timeout", "20"]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    def dest(self, name):
        return os.path.join(self.tmp, name)

    def test_fetches_verifies_and_places_decompressed_files(self):
        dest = self.dest("dest-ok")
        r = self.fetch(dest, "mnist", "cifar10")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("archive md5 ok; sha256", r.stdout)  # data_batch_2: MD5 path
        for (dataset, name), digest in self.truth.items():
            self.assertEqual(sha256(read(os.path.join(dest, dataset, name))), digest, name)
        self.assertEqual([f for f in os.listdir(dest) if f.startswith(".fetch")], [])
        # The fetched files load through dpstudy's own reader.
        r = subprocess.run([DATA_TOOL, "verify", "mnist", "--data-dir", dest, "--manifest", self.manifest],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        # A second fetch finds them valid and downloads nothing.
        before = len(Handler.requests)
        r = self.fetch(dest, "mnist")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("already present and verified", r.stdout)
        self.assertEqual(len(Handler.requests), before)

    def test_a_folder_is_a_mirror_and_a_bad_mirror_is_refused(self):
        dest = self.dest("dest-folder")
        cmd = [sys.executable, FETCH, "mnist", "--dest", dest, "--manifest", self.manifest]
        r = subprocess.run(cmd + ["--mirror", os.path.join(self.serve, "good")], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"mnist: downloading file://{self.serve}/good/", r.stdout)
        for (dataset, name), digest in self.truth.items():
            if dataset == "mnist":
                self.assertEqual(sha256(read(os.path.join(dest, dataset, name))), digest, name)
        # Neither a URL nor a folder; a malformed URL: messages, not tracebacks.
        r = subprocess.run(cmd + ["--force", "--mirror", "no-such-folder"], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--mirror 'no-such-folder': expected a URL (https://, http://, ftp://, file://) or a folder "
                      "holding the archives", r.stderr)
        r = subprocess.run(cmd + ["--force", "--mirror", "http://[bad"], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("not a valid URL (Invalid IPv6 URL)", r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        # A folder without the archives: the file named once, with why.
        empty = os.path.join(self.tmp, "no-archives")
        os.makedirs(empty, exist_ok=True)
        r = subprocess.run(cmd + ["--force", "--mirror", empty], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f"error: file://{empty}/", r.stderr)
        self.assertIn(".gz: No such file or directory\n", r.stderr)
        self.assertNotIn("Errno", r.stderr)

    def test_corrupted_file_is_rejected_and_nothing_is_placed(self):
        dest = self.dest("dest-bad")
        r = self.fetch(dest, "mnist", variant="bad")
        self.assertEqual(r.returncode, 1)
        expected = self.expected[("mnist", "train-images-idx3-ubyte")][3]
        self.assertIn("mnist/train-images-idx3-ubyte: checksum mismatch: expected SHA-256 " + expected, r.stderr)
        self.assertRegex(r.stderr, r"actual [0-9a-f]{64}")
        self.assertFalse(os.path.exists(os.path.join(dest, "mnist")))
        self.assertEqual([f for f in os.listdir(dest) if f.startswith(".fetch")], [])

    def test_corrupted_download_leaves_previous_files_untouched(self):
        dest = self.dest("dest-keep")
        self.assertEqual(self.fetch(dest, "mnist").returncode, 0)
        before = read(os.path.join(dest, "mnist", "t10k-images-idx3-ubyte"))
        r = self.fetch(dest, "mnist", "--force", variant="bad")
        self.assertEqual(r.returncode, 1)
        after = read(os.path.join(dest, "mnist", "t10k-images-idx3-ubyte"))
        self.assertEqual(before, after)

    def test_recompressed_copy_still_verifies(self):
        r = self.fetch(self.dest("dest-recompressed"), "mnist", variant="recompressed")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count("sha256 ok"), 4)

    def test_missing_file_on_server_is_a_clear_error(self):
        r = self.fetch(self.dest("dest-404"), "cifar10", variant="bad")  # bad/ has no tarball
        self.assertEqual(r.returncode, 1)
        self.assertIn("cifar-10-binary.tar.gz: HTTP 404", r.stderr)

    def test_a_destination_that_cannot_be_made_is_a_clear_error(self):
        # Under a regular file: no folder can be made there, even as root (it was a traceback).
        blocker = self.dest("a-file")
        with open(blocker, "w") as f:
            f.write("x")
        r = self.fetch(os.path.join(blocker, "data"), "mnist")
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"fetch-datasets: error: {blocker}/data: Not a directory; nothing was moved into place", r.stderr)
        self.assertNotIn("Traceback", r.stderr)

    def test_unknown_dataset_is_a_usage_error(self):
        r = self.fetch(self.dest("dest-unknown"), "imagenet")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown dataset 'imagenet'", r.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
