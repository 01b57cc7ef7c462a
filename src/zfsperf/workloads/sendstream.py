"""Walks the record headers of a ZFS send stream to count records exactly (blocks/s is exact).

Every record starts with a 312-byte `dmu_replay_record_t` (drr_type, drr_payloadlen, a union);
some record types are followed by a payload whose length comes from their header fields. The
layout is the same in zfs-fuse's pool-v23 streams and OpenZFS 2.x streams (include/sys/zfs_ioctl.h).
Only headers are read; payloads are skipped with seek, so a 1 GiB stream walks in milliseconds.
The result matches `zstreamdump`'s SUMMARY (checked in the tests against the real tool).

A stream's identity is its FIRST BEGIN record. A compound stream (`zfs send -R`, `-I`) starts with
a header BEGIN naming the top snapshot (`pool/fs@snap`); with -R its payload is a packed nvlist
whose `fromsnap` key names the incremental source (libzfs packs it with NV_ENCODE_XDR; a native
nvlist is read as having no names). Incremental is either: the header names a `fromsnap`, or the
first substream has a source (its from-guid): a `-R -i` from a clone's origin carries no
`fromsnap`, and a stream that needs a snapshot on the receiving side is incremental. Its substreams (one BEGIN..END per snapshot and dataset) are listed in order, never
merged into the identity: the last substream's name is not the stream's (a full -R of
`pool/fs@s3` with earlier snapshots ends with an incremental substream @s2 -> @s3).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import BinaryIO

RECORD_SIZE = 312
BACKUP_MAGIC = 0x2F5BACBAC
TYPES = ("BEGIN", "OBJECT", "FREEOBJECTS", "WRITE", "FREE", "END", "WRITE_BYREF", "SPILL",
         "WRITE_EMBEDDED", "OBJECT_RANGE", "REDACT")
DRR_BEGIN, DRR_OBJECT, DRR_WRITE, DRR_END, DRR_SPILL, DRR_WRITE_EMBEDDED = 0, 1, 3, 5, 7, 8
DMU_COMPOUNDSTREAM = 2
# a WRITE record's object type (drr_type, dmu_object_type_t) for data: a file's contents, a zvol's
DATA_TYPES = (19, 23)                    # DMU_OT_PLAIN_FILE_CONTENTS, DMU_OT_ZVOL


class StreamError(ValueError):
    """The file is not a (complete) ZFS send stream."""


@dataclass
class Substream:
    toname: str                     # pool/fs@snap the substream creates
    fromguid: int                   # 0: a full substream


@dataclass
class StreamInfo:
    length: int = 0
    records: dict[str, int] = field(default_factory=dict)
    write_bytes: int = 0            # logical bytes in WRITE records
    file_bytes: int = 0             # of them, files' (or a zvol's) contents (the rest: directories, ZAPs, SA metadata)
    toname: str = ""                # from the first BEGIN: the snapshot the stream is of
    incremental: bool = False       # from the first BEGIN (a compound stream: its header, see above)
    fromsnap: str = ""              # a compound -R stream's incremental source, as its header names it
    compound: bool = False          # zfs send -R / -I: a header, then substreams
    substreams: list[Substream] = field(default_factory=list)
    complete: bool = False          # ended with the outermost DRR_END

    @property
    def writes(self) -> int:
        return self.records.get("WRITE", 0)


NV_ENCODE_NATIVE, NV_ENCODE_XDR = 0, 1
DATA_TYPE_STRING = 9


def header_nvlist(payload: bytes, name: str = "stream") -> dict[str, str | None]:
    """The top-level pairs of a compound stream header's XDR nvlist: name -> string value (None for
    any other type; nested lists are skipped by their encoded size). A natively encoded nvlist (its
    layout is the sender's C structs) gives no names: {}."""
    def bad(why: str) -> StreamError:
        return StreamError(f"{name}: the compound stream header's nvlist is unreadable: {why}")
    if len(payload) < 12:
        raise bad(f"{len(payload)} bytes")
    if payload[0] == NV_ENCODE_NATIVE:
        return {}
    if payload[0] != NV_ENCODE_XDR:
        raise bad(f"encoding {payload[0]}, expected XDR ({NV_ENCODE_XDR}) or native ({NV_ENCODE_NATIVE})")
    out: dict[str, str | None] = {}
    off = 12                                # encoding, endian, 2 reserved; nvl_version; nvl_nvflag
    while True:
        if off + 8 > len(payload):
            raise bad(f"no end marker by byte {off}")
        esize, _dsize = struct.unpack_from(">ii", payload, off)
        if esize == 0:
            return out
        if esize < 20 or off + esize > len(payload):
            raise bad(f"pair of {esize} bytes at byte {off}")
        nlen = struct.unpack_from(">I", payload, off + 8)[0]
        key = payload[off + 12: off + 12 + nlen].decode(errors="replace")
        q = off + 12 + _p2roundup(nlen, 4)
        dtype = struct.unpack_from(">i", payload, q)[0]
        value = None
        if dtype == DATA_TYPE_STRING:
            vlen = struct.unpack_from(">I", payload, q + 8)[0]
            value = payload[q + 12: q + 12 + vlen].decode(errors="replace")
        out[key] = value
        off += esize


def _p2roundup(x: int, align: int = 8) -> int:
    return (x + align - 1) & ~(align - 1)


def _payload_len(rtype: int, hdr: bytes, endian: str, payloadlen: int) -> int:
    """Bytes that follow a record's 312-byte header (include/sys/zfs_ioctl.h *_PAYLOAD_SIZE)."""
    u = 8                                  # start of the union
    q = lambda off: struct.unpack_from(endian + "Q", hdr, u + off)[0]      # noqa: E731
    i = lambda off: struct.unpack_from(endian + "I", hdr, u + off)[0]      # noqa: E731
    if rtype == DRR_OBJECT:                # raw_bonuslen, else bonuslen rounded up to 8
        return i(28) or _p2roundup(i(20))
    if rtype == DRR_WRITE:                 # compressed_size when compressed, else logical_size
        return q(88) if hdr[u + 42] else q(24)
    if rtype == DRR_SPILL:                 # compressed_size when set, else length
        return q(32) or q(8)
    if rtype == DRR_WRITE_EMBEDDED:        # psize rounded up to 8
        return _p2roundup(i(44))
    return payloadlen                      # BEGIN (nvlist), END, FREE, FREEOBJECTS, BYREF, …


def check_header(path: str) -> None:
    """StreamError unless the file begins with a BEGIN record carrying the backup magic (either byte
    order): only its first record header is read, so a file that is no send stream (or cannot be
    read: OSError) is told apart before anything is created."""
    with open(path, "rb") as f:
        hdr = f.read(RECORD_SIZE)
    if len(hdr) < RECORD_SIZE:
        raise StreamError(f"{path}: not a ZFS send stream (shorter than one {RECORD_SIZE}-byte record header)")
    for e in "<>":
        if struct.unpack_from(e + "I", hdr, 0)[0] == DRR_BEGIN and struct.unpack_from(e + "Q", hdr, 8)[0] == BACKUP_MAGIC:
            return
    raise StreamError(f"{path}: not a ZFS send stream (no BEGIN record with the backup magic)")


def walk(f: BinaryIO, name: str = "stream") -> StreamInfo:
    info = StreamInfo()
    end = f.seek(0, 2)
    f.seek(0)
    pos = 0
    endian = "<"
    depth = 0
    compound = False
    in_header = False
    header_nvl = False
    while pos < end:
        hdr = f.read(RECORD_SIZE)
        if len(hdr) < RECORD_SIZE:
            raise StreamError(f"{name}: truncated record header at byte {pos} "
                              f"({len(hdr)} of {RECORD_SIZE} bytes)")
        if pos == 0:
            magic_le = struct.unpack_from("<Q", hdr, 8)[0]
            magic_be = struct.unpack_from(">Q", hdr, 8)[0]
            if struct.unpack_from("<I", hdr, 0)[0] == DRR_BEGIN and magic_le == BACKUP_MAGIC:
                endian = "<"
            elif struct.unpack_from(">I", hdr, 0)[0] == DRR_BEGIN and magic_be == BACKUP_MAGIC:
                endian = ">"
            else:
                raise StreamError(f"{name}: not a ZFS send stream (no BEGIN record with the backup magic)")
            versioninfo = struct.unpack_from(endian + "Q", hdr, 16)[0]
            compound = versioninfo & 0x3 == DMU_COMPOUNDSTREAM
            in_header = compound
        rtype, payloadlen = struct.unpack_from(endian + "II", hdr, 0)
        u = 8                                  # start of the union
        if rtype >= len(TYPES):
            raise StreamError(f"{name}: unknown record type {rtype} at byte {pos}")
        if info.complete:
            raise StreamError(f"{name}: a {TYPES[rtype]} record follows the final END at byte {pos}")
        tname = TYPES[rtype]
        info.records[tname] = info.records.get(tname, 0) + 1
        payload = _payload_len(rtype, hdr, endian, payloadlen)
        if rtype == DRR_BEGIN:
            fromguid = struct.unpack_from(endian + "Q", hdr, u + 40)[0]
            toname = hdr[u + 48: u + 48 + 256].split(b"\0", 1)[0].decode(errors="replace")
            if pos == 0:
                info.toname, info.compound = toname, compound
                info.incremental = fromguid != 0 and not compound      # a compound one: decided below
                header_nvl = compound and payloadlen > 0 and pos + RECORD_SIZE + payloadlen <= end
                if header_nvl:
                    f.seek(pos + RECORD_SIZE)
                    nvl = header_nvlist(f.read(payloadlen), name)
                    info.fromsnap = nvl.get("fromsnap") or ""
                    info.incremental = "fromsnap" in nvl
            if not (compound and pos == 0):
                depth += 1
                info.substreams.append(Substream(toname, fromguid))
                if compound and len(info.substreams) == 1:
                    # the first substream's source decides too: -I without -R has a header with no
                    # nvlist, and a -R -i from a clone's origin names no fromsnap in it
                    info.incremental = info.incremental or fromguid != 0
        elif rtype == DRR_WRITE:
            logical = struct.unpack_from(endian + "Q", hdr, u + 24)[0]
            info.write_bytes += logical
            if struct.unpack_from(endian + "I", hdr, u + 8)[0] in DATA_TYPES:
                info.file_bytes += logical
        elif rtype == DRR_END:
            if in_header:
                in_header = False
            elif compound and depth > 0:
                depth -= 1
            elif compound:
                info.complete = True
            else:
                depth -= 1
                info.complete = depth <= 0
        pos += RECORD_SIZE + payload
        if pos > end:
            raise StreamError(f"{name}: truncated: a {tname} record at byte {pos - RECORD_SIZE - payload} "
                              f"needs {payload} payload bytes, the stream ends at {end}")
        f.seek(pos)
    info.length = pos
    if not info.complete:
        raise StreamError(f"{name}: no final END record: the stream is incomplete")
    return info


def walk_file(path: str) -> StreamInfo:
    with open(path, "rb") as f:
        return walk(f, path)


def write_digests(path: str) -> dict[tuple[int, int], str]:
    """sha256 of each WRITE record's payload keyed by (object, offset): two streams of the same
    data compare equal even when GUIDs, times and record order differ."""
    import hashlib
    walk_file(path)                        # validates the framing first
    out: dict[tuple[int, int], str] = {}
    with open(path, "rb") as f:
        end = f.seek(0, 2)
        f.seek(0)
        hdr = f.read(RECORD_SIZE)
        endian = "<" if struct.unpack_from("<Q", hdr, 8)[0] == BACKUP_MAGIC else ">"
        f.seek(0)
        pos = 0
        while pos < end:
            hdr = f.read(RECORD_SIZE)
            rtype, payloadlen = struct.unpack_from(endian + "II", hdr, 0)
            n = _payload_len(rtype, hdr, endian, payloadlen)
            if rtype == DRR_WRITE:
                obj, off = (struct.unpack_from(endian + "Q", hdr, 8 + o)[0] for o in (0, 16))
                out[(obj, off)] = hashlib.sha256(f.read(n)).hexdigest()
            else:
                f.seek(n, 1)
            pos = f.tell()
    return out
