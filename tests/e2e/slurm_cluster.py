"""A one-node Slurm cluster in a temporary folder, for tests.

munged, slurmctld and slurmd run as daemons with every file (key, sockets,
state, logs) under the folder and are stopped by PID, so the machine's own
Slurm and munge, if any, are untouched. Needs Debian's slurm-wlm and munge
and root (slurmd runs jobs as their users).
"""

import os
import shutil
import signal
import socket
import subprocess
import time

DAEMONS = ("munged", "slurmctld", "slurmd")


def missing():
    """Why a cluster cannot start here, or None."""
    for prog in DAEMONS + ("sbatch", "srun", "squeue", "scontrol"):
        if not shutil.which(prog):
            return f"{prog} is not installed (apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "slurmd must run as root"
    return None


def _free_ports(n):
    """n distinct ports free now: all held open at once, so no two are the same."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Cluster:
    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.pids = {}
        self.env = dict(os.environ, SLURM_CONF=os.path.join(self.root, "slurm.conf"))

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def _write_config(self):
        host = socket.gethostname().split(".")[0]
        node = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
        ctl, d = _free_ports(2)
        conf = f"""ClusterName=dpstudy-test
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={self.path('munge', 'munge.socket')},cred_expire=10
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmctldPort={ctl}
SlurmdPort={d}
StateSaveLocation={self.path('state')}
SlurmdSpoolDir={self.path('spool')}
SlurmctldPidFile={self.path('slurmctld.pid')}
SlurmdPidFile={self.path('slurmd.pid')}
SlurmctldLogFile={self.path('log', 'slurmctld.log')}
SlurmdLogFile={self.path('log', 'slurmd.log')}
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
{node}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""
        with open(self.path("slurm.conf"), "w") as f:
            f.write(conf)

    def _pid(self, name, pidfile, timeout=10):
        end = time.time() + timeout
        while time.time() < end:
            try:
                with open(pidfile) as f:
                    self.pids[name] = int(f.read().split()[0])
                    return
            except (OSError, ValueError, IndexError):
                time.sleep(0.05)
        raise RuntimeError(f"{name} did not write {pidfile}{self.log_tail()}")

    def start(self):
        for d in ("munge", "state", "spool", "log"):
            os.makedirs(self.path(d), exist_ok=True)
        os.chmod(self.path("munge"), 0o755)  # munged refuses a socket folder others may write to
        with open(self.path("munge.key"), "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(self.path("munge.key"), 0o400)
        subprocess.run(["munged", "--force", f"--key-file={self.path('munge.key')}",
                        f"--socket={self.path('munge', 'munge.socket')}",
                        f"--pid-file={self.path('munge', 'munged.pid')}",
                        f"--log-file={self.path('log', 'munged.log')}",
                        f"--seed-file={self.path('munge', 'munged.seed')}"], check=True)
        self._pid("munged", self.path("munge", "munged.pid"))
        self._write_config()
        subprocess.run(["slurmctld", "-i"], env=self.env, check=True)
        self._pid("slurmctld", self.path("slurmctld.pid"))
        subprocess.run(["slurmd"], env=self.env, check=True)
        self._pid("slurmd", self.path("slurmd.pid"))
        end = time.time() + 30
        while time.time() < end:
            out = subprocess.run(["sinfo", "-h", "-o", "%t"], env=self.env, capture_output=True, text=True)
            if out.stdout.strip() == "idle":
                return self
            time.sleep(0.2)
        raise RuntimeError(f"the node did not become idle: {out.stdout} {out.stderr}{self.log_tail()}")

    def stop(self):
        for name in reversed(DAEMONS):
            pid = self.pids.pop(name, None)
            if pid is None:
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            end = time.time() + 10
            while time.time() < end:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
            else:
                os.kill(pid, signal.SIGKILL)

    def run(self, *cmd, check=True):
        return subprocess.run(list(cmd), env=self.env, capture_output=True, text=True, check=check)

    def job_state(self, job):
        """PENDING, RUNNING, COMPLETED, FAILED, ... (from scontrol: there is no accounting)."""
        out = self.run("scontrol", "show", "job", str(job), check=False)
        for word in out.stdout.split():
            if word.startswith("JobState="):
                return word.split("=", 1)[1]
        return None

    def wait(self, job, states=("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"),
             timeout=300):
        end = time.time() + timeout
        state = None
        while time.time() < end:
            state = self.job_state(job)
            if state in states:
                return state
            time.sleep(0.5)
        raise TimeoutError(f"job {job} still {state} after {timeout} s")

    def log_tail(self, lines=40):
        """The end of the daemons' logs, for a failure message."""
        out = []
        for name in ("slurmctld.log", "slurmd.log"):
            try:
                with open(self.path("log", name)) as f:
                    out.append(f"\n--- {name} ---\n" + "".join(f.readlines()[-lines:]))
            except OSError:
                pass
        return "".join(out)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()
