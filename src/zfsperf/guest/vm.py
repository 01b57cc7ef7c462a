"""The OpenZFS guest: boot the cached build under QEMU, reach it by ssh, tear it down.

- Accelerator: KVM only where it can run Debian's kernel (/dev/kvm writable, vmx/svm in the CPU
  flags, no kvm_pvm module); otherwise TCG, whose timings are emulation artefacts. The choice is
  recorded in the lab state and reaches run.json and every figure's line.
- Network: QEMU user networking with one host port (127.0.0.1 only) forwarded to the guest's
  dropbear; a key pair made per lab; the guest's host key is pinned on first contact.
- Storage: one sparse disk image formatted ext4 by the host, mounted at /var/tmp in the guest
  (where zfsperf puts vdev files).
- Shares (9p): the host's root read-only (tag "hostroot"; the guest lays a tmpfs over it, so the
  host's own Python and zfsperf run inside: inguest.py) and one writable host directory,
  <guest dir>/exchange, at the same path in the guest, through which results come out. Nothing
  else of the host is writable from the guest.
- Control: QEMU's machine protocol on a unix socket in the lab (qmp.sock, guest/qmp.py), through
  which a guest is paused and resumed (build turns: guest/pair.py).
- Every process is stopped by pid (QEMU's pid is in the state file).
- A twin (build turns): a second lab beside the first, `<lab>/twin`, booted from the same cached
  build with the same memory, vCPUs, disk size and shares; only its disk image, exchange directory,
  key and port are its own.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import guard, proc
from ..sshlink import Ssh
from ..targets.ssh import open_ssh
from ..errors import TargetError
from .build import DEFAULT_VERSION, Build, Builder, find_build
from .init_script import BIND_OWN_MODULES
from .qmp import Qmp

MEM_MB = int(os.environ.get("ZFSPERF_GUEST_MEM", "3072"))
DISK_GB = int(os.environ.get("ZFSPERF_GUEST_DISK_GB", "16"))
# The CPU an emulated (TCG) guest is given: QEMU's baseline x86-64 (SSE2). glibc, Python and
# OpenZFS's checksum and parity code then take their SSE2 paths, which TCG translates far better
# than the AVX/AVX2 ones `-cpu max` offered until 2026-12-07: the default suite's run inside the
# guest 111-136 s against 130-165 s in two alternating pairs, the zfs module's load 3.7 s against
# 4.4-5.8, zfsperf's start 10.3-11.1 s against 14.2-16.3 (docs/benchmarks.md). The guest's clock is
# HPET with either. Under KVM the guest has the host's CPU.
TCG_CPU = "qemu64"
# An emulated guest's processes at fixed addresses (the kernel's `norandmaps`): TCG keeps the code
# it translated by the address it ran at, so with randomized mappings every process (each zfsperf
# start, each zfs and zpool command) translated Python, numpy and libzfs again: 69,000 blocks an
# `import numpy`, the 1 GiB translation cache filled every other run. With fixed ones a second
# `import numpy` translates 16 blocks and takes 3.9-4.2 s against 5.0-5.5; a run inside the guest
# 42.3 and 42.9 s against 53.8 and 44.9 (alternately, 2026-12-07, docs/benchmarks.md). The guest is
# zfsperf's own lab, reached on 127.0.0.1 with its own key; under KVM nothing is translated.
TCG_KERNEL_ARGS = ("norandmaps",)
# An emulated guest's CPUs: one. Multi-threaded TCG gives each emulated CPU a host thread and
# stops them all together (an exclusive section) to drop translated code or flush every CPU's TLB,
# so on a host whose cores are busy (in `make test` the other lanes keep both busy) a second
# emulated CPU is one more thread the first may wait for. Measured alternately in two guests
# (2026-12-07, docs/benchmarks.md): beside one busy host process, the imports of a zfsperf run
# 31.5 and 33.9 s with two CPUs against 11.2 and 9.6 s with one; in a cgroup of 16 times the share
# (the guest lane's) beside two, a script of module loads, commands, imports and a pool 24.2-29.1 s
# against 19.8-23.3 s; alone, no difference beyond the noise. Under KVM: up to 4 of the host's CPUs.
TCG_SMP = 1
HOSTROOT = "/hostroot"       # where the guest sees the host's root, read-only (guest/init_script.py)


def lab_root() -> Path:
    return Path(os.environ.get("ZFSPERF_GUEST_DIR", "/var/tmp/zfsperf-openzfs"))


def twin_root() -> Path:
    """The second guest's lab (build turns): beside the first's files, never the same ones."""
    return lab_root() / "twin"


def accelerator() -> str:
    """"kvm" where hardware virtualisation can boot a stock kernel, else "tcg"."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        flags = ""
    if os.access("/dev/kvm", os.W_OK) and not os.path.isdir("/sys/module/kvm_pvm") and \
            (" vmx" in flags or " svm" in flags):
        return "kvm"
    return "tcg"


@dataclass
class GuestState:
    qemu_pid: int
    port: int
    accel: str
    zfs_version: str
    kernel: str
    started: float
    build_dir: str
    hostroot: bool = False          # the host's root is mounted at /hostroot in the guest
    exchange: str = ""              # the writable host directory shared with the guest

    def url(self) -> str:
        return f"ssh://root@127.0.0.1:{self.port}"


class Guest:
    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root or lab_root())

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def exchange(self) -> Path:
        return self.root / "exchange"

    @property
    def qmp_socket(self) -> Path:
        return self.root / "qmp.sock"

    def qmp(self) -> Qmp:
        """A QMP connection to this guest's QEMU (pause, resume, status)."""
        return Qmp(self.qmp_socket)

    def resume_if_paused(self, say=print) -> None:
        """A guest found paused (a zfsperf that died mid-turn left it so: guest/pair.py) runs again
        before it is used."""
        if self.state() is None or not self.qmp_socket.exists():
            return
        try:
            q = Qmp(self.qmp_socket, timeout=5)
        except TargetError:           # QEMU takes one QMP client: a build-turns run holds it, and decides
            return
        try:
            if q.status() == "paused":
                q.resume()
                say(f"the guest in {self.root} was paused (a zfsperf that died mid-turn left it so): resumed")
        finally:
            q.close()

    @property
    def key(self) -> Path:
        return self.root / "id_ed25519"

    def ssh_options(self) -> list[str]:
        return ["-i", str(self.key), "-o", f"UserKnownHostsFile={self.root / 'known_hosts'}",
                "-o", "StrictHostKeyChecking=accept-new", "-o", "LogLevel=ERROR"]

    def state(self) -> GuestState | None:
        try:
            st = GuestState(**json.loads(self.state_file.read_text()))
        except (OSError, ValueError, TypeError):
            return None
        return st if proc.pid_alive(st.qemu_pid) else None

    # ---------------------------------------------------------------- up / down
    def up(self, series: str = DEFAULT_VERSION, say=print, timeout: float = 600, *,
           watched: bool = False) -> GuestState:
        """Boot the guest (or find it running). watched: its QEMU is stopped by the guard when this
        zfsperf ends, however it ends (a guest booted for one command only)."""
        running = self.state()
        if running is not None:
            say(f"OpenZFS guest already running (qemu pid {running.qemu_pid}, {running.url()})")
            return running
        build = find_build(series) or Builder(series, say).run()
        self.root.mkdir(parents=True, exist_ok=True)
        for f in ("known_hosts", "serial.log", "qmp.sock"):
            (self.root / f).unlink(missing_ok=True)
        if not self.key.exists():
            res = proc.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "zfsperf-lab", "-f", str(self.key)])
            if not res.ok:
                raise TargetError(f"ssh-keygen failed: {res.error_text()}")
        disk = self.root / "disk.img"
        if not disk.exists():
            with open(disk, "wb") as f:
                f.truncate(DISK_GB << 30)
            res = proc.run(["mkfs.ext4", "-q", "-F", "-L", "zfsperf-vdevs", str(disk)], timeout=300)
            if not res.ok:
                disk.unlink(missing_ok=True)
                raise TargetError(f"mkfs.ext4 on the guest disk failed: {res.error_text()}")
        accel = accelerator()
        port = _free_port()
        self.exchange.mkdir(parents=True, exist_ok=True)
        share = "security_model=none,multidevs=remap"
        key = base64.b64encode(Path(str(self.key) + ".pub").read_bytes().strip()).decode()
        argv = ["qemu-system-x86_64", *(["-accel", "kvm", "-cpu", "host"] if accel == "kvm" else
                                         ["-accel", "tcg,thread=multi", "-cpu", TCG_CPU]),
                "-smp", str(TCG_SMP if accel == "tcg" else min(4, os.cpu_count() or 2)), "-m", str(MEM_MB), "-display", "none", "-monitor", "none",
                "-qmp", f"unix:{self.qmp_socket},server=on,wait=off", "-serial", f"file:{self.root / 'serial.log'}", "-no-reboot",
                "-kernel", str(build.kernel_image), "-initrd", str(build.initramfs),
                "-append", " ".join(["console=ttyS0 quiet loglevel=4 panic=-1", *(TCG_KERNEL_ARGS if accel == "tcg" else ()),
                                     f"zfsperf.key={key}", f"zfsperf.exchange={self.exchange}"]),
                "-virtfs", f"local,path=/,mount_tag=hostroot,readonly=on,{share}",
                "-virtfs", f"local,path={self.exchange},mount_tag=exchange,{share}",
                "-drive", f"file={disk},if=none,id=d0,format=raw,cache=unsafe", "-device", "virtio-blk-pci,drive=d0",
                "-netdev", f"user,id=n0,hostfwd=tcp:127.0.0.1:{port}-:22", "-device", "virtio-net-pci,netdev=n0"]
        say(f"booting OpenZFS {build.zfs_version} on {build.kernel} under {accel.upper()}"
            + (f" (software emulation, -cpu {TCG_CPU}: timings will not be speeds)" if accel == "tcg" else ""))
        if watched:
            guard.ready()
        with open(self.root / "qemu.log", "wb") as qlog:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=qlog, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        if watched:
            guard.watch(p)
        st = GuestState(p.pid, port, accel, build.zfs_version, build.kernel, time.time(), str(build.dir),
                        exchange=str(self.exchange))
        self.state_file.write_text(json.dumps(asdict(st), indent=1))
        try:
            self._wait_ready(p, st, timeout, say)
        except BaseException:
            self.down(say=lambda _m: None)
            raise
        return st

    def _wait_ready(self, p: subprocess.Popen, st: GuestState, timeout: float, say) -> None:
        deadline = time.monotonic() + timeout
        serial = self.root / "serial.log"
        while time.monotonic() < deadline:
            if p.poll() is not None:
                raise TargetError(f"qemu exited ({p.returncode}): {self._tail()}")
            text = serial.read_text(errors="replace") if serial.exists() else ""
            if "@@ERROR" in text:
                raise TargetError("the guest failed: " + text[text.index("@@ERROR"):].splitlines()[0])
            if "@@READY" in text:
                ssh = Ssh(st.url(), self.ssh_options())
                # the guest's answer, with its own modules bound where `guest run` needs them
                res = ssh.run(["sh", "-c", BIND_OWN_MODULES + "; cat /sys/module/zfs/version"], timeout=60)
                ssh.close()                    # `up` ends here: leave no shared connection behind
                if res.ok:
                    st.hostroot = "@@HOSTROOT" in text
                    if not st.hostroot:
                        say("the guest has no view of the host's root: `zfsperf guest run` will not work "
                            + " ".join(ln for ln in text.splitlines() if ln.startswith("@@WARN")))
                    self.state_file.write_text(json.dumps(asdict(st), indent=1))
                    say(f"OpenZFS guest ready: {st.url()} (zfs {res.stdout.strip()}, qemu pid {p.pid})")
                    return
            time.sleep(1)
        raise TargetError(f"the guest was not ready after {timeout:.0f} s: {self._tail()}")

    def _tail(self) -> str:
        out = []
        for f in ("serial.log", "qemu.log"):
            try:
                out.append(f"{f}: " + " | ".join((self.root / f).read_text(errors="replace").splitlines()[-5:]))
            except OSError:
                pass
        return "; ".join(out)

    def down(self, say=print) -> bool:
        try:
            st = GuestState(**json.loads(self.state_file.read_text()))
        except (OSError, ValueError, TypeError):
            say("no OpenZFS guest is running")
            return False
        if proc.pid_alive(st.qemu_pid) and "qemu" in " ".join(proc.pid_cmdline(st.qemu_pid)):
            proc.stop_pid(st.qemu_pid, grace=10, group=True)
        self.state_file.unlink(missing_ok=True)
        say(f"OpenZFS guest stopped (qemu pid {st.qemu_pid})")
        return True

    def status(self) -> dict:
        st = self.state()
        out: dict = {"root": str(self.root), "running": st is not None}
        if st is not None:
            out.update(asdict(st), url=st.url())
        for series in ("2.1", "2.3"):
            b = find_build(series)
            out[f"cached_{series}"] = str(b.dir) if b else None
        return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def open_guest_target(log: proc.CommandLog = proc.NULL_LOG, root: Path | None = None, say=print):
    """`--target guest`: the running OpenZFS guest (root: the twin's lab) as an ssh target that
    knows its accelerator; a guest a dead zfsperf left paused is resumed first."""
    lab = Guest(root)
    st = lab.state()
    if st is None:
        raise TargetError(f"no OpenZFS guest is running in {lab.root}: start one with `zfsperf guest up`")
    lab.resume_if_paused(say)
    t = open_ssh(st.url(), log, options=lab.ssh_options(), machine_pid=st.qemu_pid)
    t.accelerator = st.accel          # the guest's state knows how QEMU runs it (a declared capability)
    t.host_root = HOSTROOT            # the host's root, read-only, as the guest mounts it (init_script.py)
    return t


__all__ = ["Guest", "accelerator", "open_guest_target", "Build"]
