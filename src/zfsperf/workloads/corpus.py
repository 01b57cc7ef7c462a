"""Sendfile corpus: deterministic, seeded send streams, cached by their parameters.

A stream is made on the target itself (its stream format is the target's): a scratch pool,
a dataset with the kind's recordsize, data written by fio with a fixed randseed (so the bytes are
the same every time), a snapshot, `zfs send` into the cache. Kinds:

- random:        incompressible data, recordsize 128K
- compressible:  fio buffer_compress_percentage=60 (compresses about 2-3x), recordsize 128K
- small-records: recordsize 8K, compressible data: many small WRITE records (the receive-batching case)
- incremental:   a base stream plus an incremental stream after random 8K churn (whole records) over a
                 quarter of the data and a new file; the workload receives the base untimed, then times `-i`

Each stream's size and WRITE record count come from walking its record headers (sendstream.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterator

from ..errors import InputError, TargetError, shown
from ..pool import PoolManager, PoolSpec
from ..targets.base import Target
from ..units import MIB, format_size, parse_size
from .sendstream import StreamError, StreamInfo, walk_file

KINDS = ("random", "compressible", "small-records", "incremental")
RECORDSIZE = {"random": "128K", "compressible": "128K", "small-records": "8K", "incremental": "128K"}
COMPRESS_PCT = {"random": 0, "compressible": 60, "small-records": 60, "incremental": 0}
FORMAT_VERSION = 2          # 2: streams record the snapshot they create


def cache_dir() -> Path:
    env = os.environ.get("ZFSPERF_CACHE")
    if env:
        return Path(env) / "corpus"
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "zfsperf" / "corpus"


@dataclass
class Stream:
    path: str
    length: int
    writes: int
    write_bytes: int
    incremental: bool
    problem: str | None = None    # why walking its headers failed (the receive must then fail too)
    snapshot: str = ""            # the snapshot a receive of it creates ("inc" of pool/ds@inc), from its BEGIN
    on_target: str = ""           # its path on the target's machine (set for each run by the receive workload)
    sha256: str = ""              # of the file: the corpus's identity in run.json ("" in caches made before it)
    compound: bool = False        # zfs send -p / -R: the stream carries its source's properties
    file_bytes: int | None = None  # of write_bytes, files' contents (None in caches made before it)

    def identity(self) -> dict[str, Any]:
        return {"path": self.path, "bytes": self.length, "sha256": self.sha256 or file_sha256(self.path)}

    @classmethod
    def from_info(cls, path: str, info: StreamInfo) -> "Stream":
        snap = info.toname.split("@", 1)[1] if "@" in info.toname else ""
        return cls(path, info.length, info.writes, info.write_bytes, info.incremental, snapshot=snap,
                   compound=info.compound, file_bytes=info.file_bytes)


@dataclass
class Corpus:
    kind: str                     # one of KINDS, or "file"
    size: int                     # bytes of data written (0 for a given file)
    seed: int
    stream: Stream                # what the workload times
    base: Stream | None = None    # incremental: received first, untimed
    made_by: str = ""             # target implementation and version that made it

    def identity(self) -> dict[str, Any]:
        """What run.json records of the corpus a run received: which, made by what, and each
        stream's path, size and sha256."""
        return {"corpus": self.describe(), "made_by": self.made_by, "stream": self.stream.identity(),
                **({"base": self.base.identity()} if self.base is not None else {})}

    def describe(self) -> str:
        if self.kind == "file":
            return f"file {self.stream.path}"
        return f"{self.kind} {format_size(self.size)} seed {self.seed}"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Corpus":
        d = dict(d)
        d["stream"] = Stream(**d["stream"])
        d["base"] = Stream(**d["base"]) if d.get("base") else None
        return cls(**d)


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def from_file(path: str) -> Corpus:
    """An existing sendfile, used as it is. A stream whose headers do not walk (truncated, corrupt)
    is still handed to zfs receive, so the case fails with zfs's own message; its problem is kept."""
    try:
        info = walk_file(path)
    except FileNotFoundError:
        raise InputError(f"sendfile {path} does not exist", field="corpus.file") from None
    except StreamError as e:
        size = os.path.getsize(path)
        return Corpus("file", 0, 0, Stream(path, size, 0, 0, False, problem=str(e)))
    return Corpus("file", 0, 0, Stream.from_info(path, info))


def _key(target: Target, kind: str, size: int, seed: int) -> str:
    impl = target.impl.replace("/", "_")
    return f"{impl}-v{FORMAT_VERSION}-{kind}-{size}-s{seed}"


def cached(target: Target, kind: str, size: int, seed: int) -> Corpus | None:
    meta = cache_dir() / (_key(target, kind, size, seed) + ".json")
    try:
        corpus = Corpus.from_json(json.loads(meta.read_text()))
    except (OSError, ValueError, TypeError, KeyError):
        return None
    for s in (corpus.stream, corpus.base):
        if s is not None and (not os.path.exists(s.path) or os.path.getsize(s.path) != s.length):
            return None
    streams = [st for st in (corpus.stream, corpus.base) if st is not None]
    if any(not st.sha256 or st.file_bytes is None for st in streams):
        try:                                # a cache made before corpora had an identity, or their data's bytes
            for st in streams:
                if st.file_bytes is None:
                    st.file_bytes = walk_file(st.path).file_bytes
        except (OSError, StreamError):
            return None
        _checksum(corpus, meta)
    return corpus


def _checksum(corpus: Corpus, meta: Path) -> None:
    for st in (corpus.stream, corpus.base):
        if st is not None and not st.sha256:
            st.sha256 = file_sha256(st.path)
    tmp = meta.with_suffix(".json.partial")
    tmp.write_text(json.dumps(corpus.to_json(), indent=1) + "\n")
    os.replace(tmp, meta)


def _fio(target: Target, filename: str, *, rw: str, bs: str, size: int, seed: int, compress_pct: int,
         io_size: int | None = None) -> None:
    argv = ["fio", "--name=corpus", f"--filename={filename}", f"--rw={rw}", f"--bs={bs}",
            f"--size={size}", "--ioengine=psync", f"--randseed={seed}", "--randrepeat=1",
            "--refill_buffers", "--fallocate=none", "--end_fsync=1", "--output-format=terse"]
    if compress_pct:
        argv += [f"--buffer_compress_percentage={compress_pct}", "--buffer_compress_chunk=4k"]
    if io_size:
        argv += [f"--io_size={io_size}"]
    res = target.run(argv, timeout=3600)
    if not res.ok:
        raise TargetError(f"fio could not write corpus data: {res.error_text()}")


def make(target: Target, kind: str, size: int | str, *, seed: int = 1, vdev_dir: Path,
         out: str | None = None, progress=None) -> Corpus:
    """Make (or reuse from the cache) a stream of this kind and size on this target."""
    if kind not in KINDS:
        raise InputError(f"unknown corpus kind {shown(kind)} (expected {' | '.join(KINDS)})", field="corpus.kind")
    size = parse_size(size)
    if size < MIB:
        raise InputError(f"corpus size {size} is below 1M", field="corpus.size")
    key = _key(target, kind, size, seed)
    if out is not None:
        return _make(target, kind, size, seed, key, Path(vdev_dir), out, progress)
    with _making(key, progress):
        hit = cached(target, kind, size, seed)
        return hit if hit is not None else _make(target, kind, size, seed, key, Path(vdev_dir), None, progress)


@contextlib.contextmanager
def _making(key: str, progress=None) -> Iterator[None]:
    """One zfsperf process at a time makes the cached corpus of one key; another (a run in another
    mount namespace: a test lane, a fleet's hosts on one machine) waits, then takes it from the
    cache. Two at once wrote one .partial file and one of them failed on it."""
    d = cache_dir()
    d.mkdir(parents=True, exist_ok=True)
    with open(d / f"{key}.lock", "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if progress:
                progress("waiting for another zfsperf process making the same corpus")
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _make(target: Target, kind: str, size: int, seed: int, key: str, vdev_dir: Path, out: str | None,
          progress=None) -> Corpus:
    dest_dir = Path(out).parent if out else cache_dir()
    dest_dir.mkdir(parents=True, exist_ok=True)
    stream_path = out or str(dest_dir / f"{key}.zfs")
    base_path = (stream_path[:-4] if stream_path.endswith(".zfs") else stream_path) + ".base.zfs"
    if progress:
        progress(f"making {kind} corpus of {format_size(size)} (seed {seed})")

    pools = PoolManager(target, Path(vdev_dir) / "corpus", run_id=f"corpus-{os.getpid()}")
    vdev_size = max(256 * MIB, (size * 5 // 2 + 128 * MIB) // MIB * MIB)
    pool = pools.create(PoolSpec(layout="stripe", vdevs=1, vdev_size=vdev_size), name=None)
    try:
        ds = pool.dataset("src", {"recordsize": RECORDSIZE[kind], "compression": "off", "atime": "off"})
        data = f"{pool.mountpoint}/src/data.bin"
        _fio(target, data, rw="write", bs=RECORDSIZE[kind], size=size, seed=seed,
             compress_pct=COMPRESS_PCT[kind])
        _snapshot(target, f"{ds}@base")
        base = None
        if kind == "incremental":
            _send(target, [f"{ds}@base"], base_path)
            _fio(target, data, rw="randwrite", bs=RECORDSIZE[kind], size=size, seed=seed + 1,
                 compress_pct=0, io_size=size // 4)
            _fio(target, f"{pool.mountpoint}/src/new.bin", rw="write", bs="128k", size=max(MIB, size // 8),
                 seed=seed + 2, compress_pct=0)
            _snapshot(target, f"{ds}@inc")
            _send(target, ["-i", f"{ds}@base", f"{ds}@inc"], stream_path)
            base = Stream.from_info(base_path, walk_file(base_path))
        else:
            _send(target, [f"{ds}@base"], stream_path)
        corpus = Corpus(kind, size, seed, Stream.from_info(stream_path, walk_file(stream_path)), base,
                        made_by=target.zfs_version())
    finally:
        pools.destroy(pool)
        pools.cleanup_files()
    meta = Path(stream_path[:-4] + ".json" if stream_path.endswith(".zfs") else stream_path + ".json")
    _checksum(corpus, meta)
    return corpus


def _snapshot(target: Target, snap: str) -> None:
    # let the data reach a txg before the snapshot (zfs-fuse's txg timeout is ~30 s; sync is implicit)
    res = target.run(["zfs", "snapshot", snap])
    if not res.ok:
        raise TargetError(f"zfs snapshot {snap} failed: {res.error_text()}")


def _send(target: Target, args: list[str], path: str) -> None:
    tmp = path + ".partial"
    t0 = time.monotonic()
    res = target.run(["zfs", "send", *args], stdout_file=tmp, timeout=3600)
    if not res.ok:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise TargetError(f"zfs send {' '.join(args)} failed: {res.error_text()}")
    with open(tmp, "rb") as f:          # on disk before any counted iteration reads it
        os.fsync(f.fileno())
    os.replace(tmp, path)
    target.log.write(f"# sent {os.path.getsize(path)} bytes in {time.monotonic() - t0:.2f} s to {path} (synced)")


def describe_spec(spec: dict) -> str:
    if "file" in spec:
        return f"file {spec['file']}"
    return f"{spec.get('kind')} {spec.get('size')}"


def resolve(target: Target, spec: dict, vdev_dir: Path, progress=None) -> Corpus:
    """A corpus from a runfile's corpus table: {file = PATH} or {kind, size, seed}."""
    if "file" in spec:
        return from_file(str(spec["file"]))
    return make(target, spec["kind"], spec.get("size", "256M"), seed=int(spec.get("seed", 1)),
                vdev_dir=vdev_dir, progress=progress)


__all__ = ["Corpus", "Stream", "KINDS", "make", "resolve", "from_file", "cache_dir"]
