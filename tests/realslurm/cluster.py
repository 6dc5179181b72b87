"""A real single-host Slurm 22.05 cluster for tests: munge, MariaDB, slurmdbd, slurmctld, 2 slurmd, slurmrestd.

Everything runs in the foreground under a temp folder, listens on 127.0.0.1 (free ports picked at
start), and is stopped by PID. Quirks (see shared/notes/real-components/README.md): fake GPU char
devices made with mknod (Slurm 22.05 drops file-less GPUs), two slurmd on one host with their own
ports, slurmrestd as non-root (`-u slurm`) with `SLURM_JWT=daemon`, `NoInAddrAny` everywhere.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

CLUSTER = "stewtest"
NODES = ("gpu-01", "gpu-02")
GPUS_PER_NODE = 8
PARTITIONS = ("training", "inference", "interactive", "batch")

FLAT_ACCOUNTING = """\
add cluster {cluster}
add qos low Priority=0 PreemptMode=requeue
add qos high Priority=1000
add qos team-quota Priority=10
modify qos where name=high set Preempt=low,normal
modify qos where name=normal set PreemptMode=requeue
add account ml-research Description=ml Organization=ai Cluster={cluster}
add account inference Description=inference Organization=ai Cluster={cluster}
add user root Account=ml-research QOS=normal,low,high,team-quota DefaultQOS=normal Cluster={cluster}
add user root Account=inference QOS=normal,low,high,team-quota DefaultQOS=normal Cluster={cluster}
add user slurm Account=ml-research AdminLevel=Admin Cluster={cluster}
"""

NESTED_ACCOUNTING = """\
add cluster {cluster}
add qos scavenger Priority=0 PreemptMode=cancel
add qos high Priority=1000
modify qos where name=high set Preempt=scavenger,normal
modify qos where name=normal set PreemptMode=cancel
add account research Description=research Organization=ai Cluster={cluster}
add account vision Parent=research Description=vision Organization=ai Cluster={cluster}
add account nlp Parent=research Description=nlp Organization=ai Cluster={cluster}
add account platform Description=platform Organization=ops Cluster={cluster}
add user root Account=vision QOS=normal,high,scavenger DefaultQOS=normal Cluster={cluster}
add user root Account=nlp QOS=normal,high,scavenger DefaultQOS=normal Cluster={cluster}
add user root Account=platform QOS=normal,high,scavenger DefaultQOS=normal Cluster={cluster}
add user slurm Account=platform AdminLevel=Admin Cluster={cluster}
"""


@dataclass(frozen=True)
class Partition:
    name: str
    max_time: str
    tier: int
    default: bool = False


@dataclass(frozen=True)
class Layout:
    """How a test cluster is built: its nodes, GPUs, partitions, preemption and accounts."""

    name: str
    cluster: str
    nodes: tuple[str, ...]
    gpus_per_node: int
    partitions: tuple[Partition, ...]
    preempt_mode: str
    accounting: str
    limits: tuple[tuple[str, str], ...] = ()  # (account, GrpTRES), set one sacctmgr call each


    @property
    def hostlist(self) -> str:
        return f"gpu-[01-{len(self.nodes):02d}]"


# Today's layout: 2 nodes x 8 GPUs, four partitions, PreemptMode=REQUEUE, flat accounts.
FLAT = Layout(
    "flat", CLUSTER, NODES, GPUS_PER_NODE,
    tuple(Partition(n, "7-00:00:00", t, n == "training") for n, t in zip(PARTITIONS, (10, 20, 30, 1), strict=True)),
    "REQUEUE", FLAT_ACCOUNTING,
)
# The second layout (issue 19), as many sites run Slurm: 3 nodes x 4 GPUs, `train` and `dev` with different
# MaxTime, PreemptMode=CANCEL, QOS high/normal/scavenger, research -> {vision, nlp} each with its own
# GrpTRES gres/gpu (vision also cpu=64), and a top-level platform account.
NESTED = Layout(
    "nested", "stewnest", ("gpu-01", "gpu-02", "gpu-03"), 4,
    (Partition("train", "2-00:00:00", 10, True), Partition("dev", "01:00:00", 20)),
    "CANCEL", NESTED_ACCOUNTING,
    (("research", "gres/gpu=10"), ("vision", "cpu=64,gres/gpu=8"), ("nlp", "gres/gpu=5")),
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class SlurmCluster:
    base: Path
    layout: Layout = FLAT
    ports: dict[str, int] = field(default_factory=dict)
    procs: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    jwt_port: int = 0
    # UTC, naive as sacct's window arguments: every job of the session was submitted after it
    started_at: datetime = datetime.min
    _deadline: float = float("inf")

    def window(self) -> tuple[datetime, datetime]:
        """sacct's window for the session's jobs: from the cluster's start (not from now: under load a test
        may run long after the jobs) to a little past now."""
        return self.started_at - timedelta(minutes=5), datetime.now(UTC).replace(tzinfo=None) + timedelta(minutes=5)

    @property
    def conf(self) -> Path:
        return self.base / "etc" / "slurm.conf"

    @property
    def rest_socket(self) -> str:
        return str(self.base / "run" / "slurmrestd.sock")

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def _env(self, **extra: str) -> dict[str, str]:
        return {**os.environ, **self.env, "TZ": "UTC", **extra}

    def run(self, *args: str, check: bool = True, stdin: str | None = None) -> str:
        done = subprocess.run(
            list(args), capture_output=True, text=True, env=self._env(), input=stdin, timeout=60, check=False
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
        return done.stdout

    def _spawn(self, name: str, args: list[str], **env: str) -> subprocess.Popen[bytes]:
        log = (self.base / "log" / f"{name}.out").open("wb")
        proc = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, env=self._env(**env), start_new_session=True
        )
        log.close()
        self.procs.append((name, proc))
        return proc

    def _wait(self, what: str, ready: object, seconds: float = 60.0) -> None:
        deadline = min(time.monotonic() + seconds, self._deadline)
        while time.monotonic() < deadline:
            for name, proc in self.procs:
                if proc.poll() is not None:
                    tail = (self.base / "log" / f"{name}.out").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"{name} exited with {proc.returncode} while waiting for {what}:\n{tail}")
            if callable(ready) and ready():
                return
            time.sleep(0.1)
        raise RuntimeError(f"{what} not ready within {seconds:.0f} s (logs in {self.base / 'log'})")

    def _ok(self, *args: str) -> bool:
        return subprocess.run(list(args), capture_output=True, env=self._env(), timeout=30, check=False).returncode == 0

    # -- bring-up ------------------------------------------------------------------------------

    def start(self) -> None:
        self.started_at = datetime.now(UTC).replace(tzinfo=None)
        t0 = time.monotonic()
        self._deadline = t0 + 60.0  # the whole bring-up must finish within 60 s
        for sub in ("etc", "run", "log", "state", "spool", "dev", "munge", "db", "jobs"):
            (self.base / sub).mkdir(parents=True, exist_ok=True)
        self.base.chmod(0o755)
        (self.base / "jobs").chmod(0o1777)
        for key in ("ctld", "dbd", "db", "jwt", *(f"slurmd{i + 1}" for i in range(len(self.layout.nodes)))):
            self.ports[key] = free_port()
        self.jwt_port = self.ports["jwt"]
        self._munge()
        self.timings["munge"] = time.monotonic() - t0
        self._mariadb()
        self.timings["mariadb"] = time.monotonic() - t0
        self._configs()
        self._spawn("slurmdbd", ["/usr/sbin/slurmdbd", "-D"])
        self._wait("slurmdbd", lambda: self._ok("sacctmgr", "-n", "list", "cluster"))
        self.timings["slurmdbd"] = time.monotonic() - t0
        self.run("sacctmgr", "-i", stdin=self.layout.accounting.format(cluster=self.layout.cluster), check=False)
        self.timings["accounts"] = time.monotonic() - t0
        self._spawn("slurmctld", ["/usr/sbin/slurmctld", "-D", "-i"])
        self._wait("slurmctld", lambda: "UP" in self.run("scontrol", "ping", check=False))
        for node in self.layout.nodes:
            self._spawn(f"slurmd-{node}", ["/usr/sbin/slurmd", "-D", "-N", node])
        self._wait("nodes idle", self._nodes_idle)
        # GrpTRES gres/gpu is known to slurmdbd only once slurmctld has registered its AccountingStorageTRES
        for account, tres in self.layout.limits:
            self.run("sacctmgr", "-i", "modify", "account", "where", f"name={account}",
                     f"cluster={self.layout.cluster}", "set", f"GrpTRES={tres}")
        self.timings["slurmd"] = time.monotonic() - t0
        self._spawn(
            "slurmrestd",
            ["/usr/sbin/slurmrestd", "-a", "rest_auth/local", f"unix:{self.rest_socket}"],
            SLURMRESTD_SECURITY="disable_user_check",
        )
        self._spawn(
            "slurmrestd-jwt",
            ["/usr/sbin/slurmrestd", "-u", "slurm", "-a", "rest_auth/jwt", f"127.0.0.1:{self.jwt_port}"],
            SLURM_JWT="daemon",
        )
        self._wait("slurmrestd", lambda: Path(self.rest_socket).exists() and self._port_open(self.jwt_port))
        self.timings["ready"] = time.monotonic() - t0
        self._deadline = float("inf")

    def _munge(self) -> None:
        munge = pwd.getpwnam("munge")
        key = self.base / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o400)
        for path in (self.base / "munge", key):
            os.chown(path, munge.pw_uid, munge.pw_gid)
        # munged refuses a socket folder without execute for all, and checks it as it starts: set it first
        (self.base / "munge").chmod(0o711)
        sock = self.base / "munge" / "munge.sock"
        self._spawn(
            "munged",
            [
                "runuser",
                "-u",
                "munge",
                "--",
                "/usr/sbin/munged",
                "-F",
                f"--socket={sock}",
                f"--key-file={key}",
                f"--pid-file={self.base}/munge/munged.pid",
                f"--log-file={self.base}/munge/munged.log",
                f"--seed-file={self.base}/munge/seed",
            ],
        )
        self._wait("munged", sock.exists)

    def _mariadb(self) -> None:
        datadir = self.base / "db"
        subprocess.run(
            [
                "mariadb-install-db",
                "--no-defaults",
                f"--datadir={datadir}",
                "--user=root",
                "--skip-test-db",
                "--auth-root-authentication-method=normal",
            ],
            capture_output=True,
            check=True,
            timeout=60,
        )
        sock = self.base / "run" / "mysqld.sock"
        self._spawn(
            "mariadbd",
            [
                "/usr/sbin/mariadbd",
                "--no-defaults",
                f"--datadir={datadir}",
                f"--socket={sock}",
                f"--port={self.ports['db']}",
                "--bind-address=127.0.0.1",
                "--user=root",
                "--skip-grant-tables",
                "--innodb-buffer-pool-size=64M",
                "--skip-log-bin",
            ],
        )
        self._wait("mariadbd", lambda: self._port_open(self.ports["db"]))

    def _configs(self) -> None:
        b, etc, p = self.base, self.base / "etc", self.ports
        key = etc / "jwt_hs256.key"
        key.write_bytes(secrets.token_bytes(32))
        key.chmod(0o600)
        slurm_uid = pwd.getpwnam("slurm")
        os.chown(key, 0, 0)
        munge_sock = b / "munge" / "munge.sock"
        lay = self.layout
        for i in range(lay.gpus_per_node):
            dev = b / "dev" / f"nvidia{i}"
            if not dev.exists():
                os.mknod(dev, 0o666 | 0o020000, os.makedev(195, i))
        host = socket.gethostname().split(".")[0]
        nodes = "\n".join(
            f"NodeName={n} NodeHostname={n} NodeAddr=127.0.0.1 Port={p[f'slurmd{i + 1}']} CPUs=64 Boards=1 "
            f"SocketsPerBoard=2 CoresPerSocket=32 ThreadsPerCore=1 RealMemory=512000 Gres=gpu:h100:{lay.gpus_per_node} "
            "State=UNKNOWN"
            for i, n in enumerate(lay.nodes)
        )
        parts = "\n".join(
            f"PartitionName={part.name} Nodes={lay.hostlist} {'Default=YES ' if part.default else ''}"
            f"MaxTime={part.max_time} State=UP PriorityTier={part.tier}"
            for part in lay.partitions
        )
        (etc / "slurm.conf").write_text(f"""\
ClusterName={lay.cluster}
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={p["ctld"]}
SlurmdPort={p["slurmd1"]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={munge_sock}
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key={key}
CredType=cred/munge
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
StateSaveLocation={b}/state
SlurmdSpoolDir={b}/spool/%n
SlurmctldPidFile={b}/run/slurmctld.pid
SlurmdPidFile={b}/run/slurmd-%n.pid
SlurmctldLogFile={b}/log/slurmctld.log
SlurmdLogFile={b}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SlurmdParameters=config_overrides
ReturnToService=2
InactiveLimit=0
KillWait=2
MinJobAge=600
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,sched_min_interval=100000
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
PriorityType=priority/multifactor
PriorityWeightQOS=10000
PreemptType=preempt/qos
PreemptMode={lay.preempt_mode}
JobRequeue=1
GresTypes=gpu
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={p["dbd"]}
AccountingStoragePass={munge_sock}
AccountingStorageEnforce=associations,limits,qos
AccountingStorageTRES=gres/gpu,gres/gpu:h100
JobCompType=jobcomp/none
{nodes}
{parts}
""")
        (etc / "gres.conf").write_text(
            f"AutoDetect=off\nNodeName={lay.hostlist} Name=gpu Type=h100 "
            f"File={b}/dev/nvidia[0-{lay.gpus_per_node - 1}]\n"
        )
        dbd = etc / "slurmdbd.conf"
        dbd.write_text(f"""\
AuthType=auth/munge
AuthInfo=socket={munge_sock}
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key={key}
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={p["dbd"]}
CommunicationParameters=NoInAddrAny
SlurmUser=root
LogFile={b}/log/slurmdbd.log
PidFile={b}/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={p["db"]}
StorageUser=root
StorageLoc=slurm_acct_db
""")
        dbd.chmod(0o600)
        del slurm_uid

    def _port_open(self, port: int) -> bool:
        with socket.socket() as s:
            s.settimeout(0.2)
            return s.connect_ex(("127.0.0.1", port)) == 0

    def _nodes_idle(self) -> bool:
        out = self.run("sinfo", "-h", "-N", "-p", self.layout.partitions[0].name, "-o", "%N %T", check=False)
        states = dict(line.split() for line in out.splitlines() if line.strip())
        if any(s.startswith(("drain", "down", "inval")) for s in states.values()):
            self.run("scontrol", "update", f"nodename={self.layout.hostlist}", "state=resume", check=False)
        return len(states) == len(self.layout.nodes) and all(s == "idle" for s in states.values())

    # -- teardown ------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every process this cluster started, newest first, by PID (TERM, then KILL)."""
        for _name, proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=5)
        self.procs.clear()

    def alive(self) -> list[str]:
        return [name for name, proc in self.procs if proc.poll() is None]

    def token(self, user: str = "root", lifespan: int = 600) -> str:
        out = self.run("scontrol", "token", f"username={user}", f"lifespan={lifespan}")
        return out.strip().split("=", 1)[1]


def installed() -> str | None:
    """The first missing binary, or None when everything is there."""
    for name in (
        "slurmctld",
        "slurmd",
        "slurmdbd",
        "slurmrestd",
        "sacct",
        "sbatch",
        "munged",
        "mariadbd",
        "mariadb-install-db",
    ):
        if shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin") is None:
            return name
    if not Path("/usr/lib/x86_64-linux-gnu/slurm-wlm/auth_jwt.so").exists():
        return "auth_jwt.so"
    return None
