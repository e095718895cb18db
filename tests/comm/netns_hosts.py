"""Several hosts on one machine: Linux network namespaces, each with its own address, host name and sshd.

``NetnsHosts(count, tmp)`` makes ``count`` namespaces joined by a bridge that lives in one more
namespace (nothing is added to the machine's own network namespace), gives host ``i`` the address
198.18.<net>.<i+1>/24 (RFC 2544's benchmarking range) and the name ``lsn<i>``, and starts an sshd
in each, in its own UTS namespace so that ``hostname`` differs, with a throwaway key pair in
``tmp``. Names resolve through ``/etc/netns/<ns>/hosts``, which ``ip netns exec`` mounts over
``/etc/hosts`` inside the namespace only. Commands run "on host 0" with ``run``; Open MPI reaches the
others with ``ssh -F tmp/ssh_config`` (``mpirun_args``). Processes in every namespace share the file
system, so the same Python, venv and temporary files work on every host.

``close()`` (also on any failure during setup) stops every process left in the namespaces, deletes
them and the ``/etc/netns`` entries. Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN), ``ip`` and ``sshd``;
``unavailable()`` says why not.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"


def unavailable() -> str:
    """Why these hosts cannot be made here ('' when they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "unshare", "ssh", "ssh-keygen"):
        if not shutil.which(tool):
            return f"{tool} is not installed"
    if not os.access(SSHD, os.X_OK):
        return f"{SSHD} is not installed (Debian: openssh-server)"
    probe = f"lsprobe{os.getpid()}"
    done = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"ip netns add is not permitted here: {done.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, check=False)
    return ""


class NetnsHosts:
    def __init__(self, count: int, tmp: Path, timeout_s: float = 20.0) -> None:
        self.count = count
        self.tmp = Path(tmp)
        tag = f"ls{os.getpid() % 100000}"
        self.switch = f"{tag}sw"
        self.namespaces = [f"{tag}n{i}" for i in range(count)]
        self.names = [f"lsn{i}" for i in range(count)]
        net = os.getpid() % 250
        self.addresses = [f"198.18.{net}.{i + 1}" for i in range(count)]
        self._sshd: list[subprocess.Popen] = []
        self._made: list[str] = []
        try:
            self._setup(timeout_s)
        except BaseException:
            self.close()
            raise

    # ---- setup -------------------------------------------------------------------------------
    def _ip(self, *args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=10)

    def _setup(self, timeout_s: float) -> None:
        self._ip("netns", "add", self.switch)
        self._made.append(self.switch)
        self._ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        self._ip("-n", self.switch, "link", "set", "br0", "up")
        hosts_file = "127.0.0.1 localhost\n" + "".join(f"{a} {n}\n" for a, n in zip(self.addresses, self.names))
        for i, ns in enumerate(self.namespaces):
            self._ip("netns", "add", ns)
            self._made.append(ns)
            self._ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", f"p{i}", "netns", self.switch)
            self._ip("-n", self.switch, "link", "set", f"p{i}", "master", "br0")
            self._ip("-n", self.switch, "link", "set", f"p{i}", "up")
            self._ip("-n", ns, "addr", "add", f"{self.addresses[i]}/24", "dev", "eth0")
            self._ip("-n", ns, "link", "set", "eth0", "up")
            self._ip("-n", ns, "link", "set", "lo", "up")
            etc = Path("/etc/netns") / ns
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text(hosts_file)
        key, host_key = self.tmp / "id", self.tmp / "host_key"
        for path in (key, host_key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True, timeout=20)
        auth = self.tmp / "authorized_keys"
        auth.write_text((self.tmp / "id.pub").read_text())
        auth.chmod(0o600)
        (self.tmp / "ssh_config").write_text(
            f"Host *\n  IdentityFile {key}\n  User root\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n"
            "  LogLevel ERROR\n  BatchMode yes\n  ConnectTimeout 5\n")
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege separation directory
        for i, ns in enumerate(self.namespaces):
            conf = self.tmp / f"sshd{i}.conf"
            conf.write_text(f"ListenAddress {self.addresses[i]}\nHostKey {host_key}\nAuthorizedKeysFile {auth}\n"
                            "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\nLogLevel ERROR\n"
                            f"PidFile {self.tmp}/sshd{i}.pid\nMaxStartups 100:30:200\n")
            log = open(self.tmp / f"sshd{i}.log", "w")  # noqa: SIM115 - kept open for the child's lifetime
            self._sshd.append(subprocess.Popen(
                ["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c",
                 f'hostname {self.names[i]} && exec {SSHD} -D -e -f "$0"', str(conf)],
                stdout=log, stderr=subprocess.STDOUT))
        deadline = time.monotonic() + timeout_s
        for name in self.names:
            while True:
                done = self.run(["ssh", "-F", str(self.tmp / "ssh_config"), name, "hostname"], timeout_s=10)
                if done.returncode == 0 and done.stdout.strip() == name:
                    break
                if time.monotonic() > deadline:
                    logs = " | ".join((self.tmp / f"sshd{i}.log").read_text() for i in range(self.count))
                    raise RuntimeError(f"sshd on {name} did not answer: {done.stderr.strip()} {logs}")
                time.sleep(0.2)

    # ---- use ---------------------------------------------------------------------------------
    def run(self, cmd: list[str], *, env: dict[str, str] | None = None, timeout_s: float = 60,
            cwd: str | Path | None = None) -> subprocess.CompletedProcess:
        """Run ``cmd`` on host 0 (its network and UTS namespace); a hang raises TimeoutExpired."""
        wrapped = ["ip", "netns", "exec", self.namespaces[0], "unshare", "--uts", "sh", "-c",
                   f'hostname {self.names[0]} && exec "$@"', "sh", *cmd]
        return subprocess.run(wrapped, capture_output=True, text=True, env=env, timeout=timeout_s, cwd=cwd,
                              check=False)

    def mpirun_args(self, slots: int, ranks: int, forward: tuple[str, ...] = ()) -> list[str]:
        """``mpirun`` across the hosts over ssh and TCP on eth0, ``slots`` ranks per host."""
        args = ["mpirun", "--mca", "plm_rsh_agent", f"ssh -F {self.tmp / 'ssh_config'}",
                "--mca", "btl_tcp_if_include", "eth0", "--mca", "oob_tcp_if_include", "eth0",
                "--host", ",".join(f"{n}:{slots}" for n in self.names), "-n", str(ranks)]
        for name in forward:
            args += ["-x", name]
        return args

    # ---- teardown ----------------------------------------------------------------------------
    def close(self) -> None:
        for ns in self._made:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        for proc in self._sshd:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
        for ns in reversed(self._made):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
            shutil.rmtree(Path("/etc/netns") / ns, ignore_errors=True)
        self._made.clear()
        self._sshd.clear()

    def __enter__(self) -> NetnsHosts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
