"""Which ZFS properties a runfile may set on zfsperf's test pools and datasets: one table.

A test never reaches outside its own pool. Every native property of `zfs get all` and `zpool get
all` as OpenZFS 2.1.11, 2.3.2 and zfs-fuse (pool v23) print them is placed here, once:

- **allowed**: it changes what is measured inside the pool and nothing outside it; its value is
  still checked for the syntax ZFS takes (an enumeration, a size, a count), so that a value that can
  only fail at `zfs create` is refused before anything is touched;
- **allowed under conditions**: only the values that keep the pool to itself (`sharenfs` only `off`,
  `mountpoint` only `none` or `legacy`: zfsperf mounts every pool under a directory of its own,
  and gives it a cache file of the run's own, never the host's import cache);
- **refused**: it reaches the host (`altroot`, `bootfs`), needs something zfsperf does not make
  (an encryption key), or is read-only (`used`, `guid`).

A user property (`module:name`) is free text inside the pool and allowed, except zfsperf's own
ownership mark (`zfsperf:owner`): only zfsperf sets it, and only on the pools it made. A native name the table does not place is refused: a
property of a newer ZFS is placed here before a runfile may set it. The targets' own host-touching
properties (FreeBSD's `jailed`, zfs-fuse's `shareiscsi`) are in the same table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from .errors import did_you_mean, shown
from .units import MIB, parse_size

ALLOWED, CONDITIONAL, REFUSED, READ_ONLY = "allowed", "allowed under conditions", "refused", "read-only"
USER_PROP_RE = re.compile(r"^[a-z0-9_.+-]+:[a-z0-9_.:+-]+$")
OWN_MARK = "zfsperf:owner"            # pool.OWNER_PROP: which run made the pool
MAX_VALUE = 1024

Check = Callable[[str], "str | None"]     # why a value is refused, or None


@dataclass(frozen=True)
class Rule:
    place: str                 # ALLOWED, CONDITIONAL, REFUSED or READ_ONLY
    check: Check | None        # the value's syntax or the safe values (ALLOWED, CONDITIONAL)
    why: str = ""              # REFUSED, CONDITIONAL: what the property would reach


def _enum(*values: str, said: str | None = None) -> Check:
    allowed = {v.lower() for v in values}

    def check(value: str) -> str | None:
        return None if value.lower() in allowed else f"takes {said or ', '.join(values)}, not {shown(value)}"
    return check


def _size(*words: str, least: int = 0, most: int | None = None) -> Check:
    def check(value: str) -> str | None:
        if value.lower() in words:
            return None
        try:
            n = parse_size(value)
        except ValueError:
            return f"takes a size{' or ' + ' / '.join(words) if words else ''}, not {shown(value)}"
        if n < least or (most is not None and n > most):
            return f"takes a size from {least} to {most}, not {shown(value)}"
        return None
    return check


def _count(*words: str, least: int = 0, most: int = 2 ** 63) -> Check:
    def check(value: str) -> str | None:
        if value.lower() in words or (value.isdigit() and least <= int(value) <= most):
            return None
        return f"takes a whole number from {least}{' or ' + ' / '.join(words) if words else ''}, not {shown(value)}"
    return check


def _recordsize(value: str) -> str | None:
    try:
        n = parse_size(value)
    except ValueError:
        return f"takes a size (512 to 16M, a power of 2), not {shown(value)}"
    if n < 512 or n > 16 * MIB or n & (n - 1):
        return f"takes a power of 2 from 512 to 16M, not {shown(value)}"
    return None


def _text(most: int) -> Check:
    def check(value: str) -> str | None:
        return None if len(value) <= most and value.isprintable() else \
            f"takes printable text of at most {most} characters, not {shown(value[:40])}"
    return check


def _names(value: str) -> str | None:
    """compatibility: off, legacy or names of files in ZFS's compatibility.d, never a path."""
    if value in ("off", "legacy") or re.fullmatch(r"[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*", value) \
            and ".." not in value:
        return None
    return f"takes off, legacy or compatibility.d names (no paths), not {shown(value)}"


ONOFF = _enum("on", "off")
COMPRESSION = ("on", "off", "lzjb", "gzip", *(f"gzip-{i}" for i in range(1, 10)), "zle", "lz4", "zstd",
               *(f"zstd-{i}" for i in range(1, 20)), "zstd-fast",
               *(f"zstd-fast-{i}" for i in [*range(1, 11), 20, 30, 40, 50, 60, 70, 80, 90, 100, 500, 1000]))
CHECKSUMS = ("on", "off", "fletcher2", "fletcher4", "sha256", "noparity", "sha512", "skein", "edonr", "blake3")
DEDUP = ("on", "off", "verify", *(f"{c}{v}" for c in ("sha256", "sha512", "skein", "edonr", "blake3")
                                  for v in ("", ",verify")))


def _read_only(*names: str) -> dict[str, Rule]:
    return {n: Rule(READ_ONLY, None, "a read-only statistic: it cannot be set") for n in names}


def _refused(why: str, *names: str) -> dict[str, Rule]:
    return {n: Rule(REFUSED, None, why) for n in names}


def _only(check: Check, why: str, *names: str) -> dict[str, Rule]:
    return {n: Rule(CONDITIONAL, check, why) for n in names}


def _allowed(check: Check, *names: str) -> dict[str, Rule]:
    return {n: Rule(ALLOWED, check) for n in names}


_NO_KEY = "encrypted test datasets need a key that zfsperf would write, which it does not yet"
_SELINUX = "a security label the host's policy reads"

DATASET: dict[str, Rule] = {
    **_read_only("type", "creation", "used", "available", "referenced", "compressratio", "mounted", "createtxg",
                 "guid", "usedbysnapshots", "usedbydataset", "usedbychildren", "usedbyrefreservation", "objsetid",
                 "refcompressratio", "written", "logicalused", "logicalreferenced", "filesystem_count",
                 "snapshot_count", "encryptionroot", "keystatus", "origin", "clones", "receive_resume_token",
                 "redact_snaps", "snapshots_changed", "defer_destroy", "userrefs"),
    **_only(_enum("none", "legacy"), "zfsperf mounts every test dataset under a directory of its own for "
            "the run; another mountpoint would mount it over the host's files", "mountpoint"),
    "canmount": Rule(ALLOWED, _enum("on", "off", "noauto")),   # mounts only where zfsperf's mountpoint says
    **_only(_enum("off"), "it would share the test dataset with the network", "sharenfs", "sharesmb", "shareiscsi"),
    **_only(_enum("off"), "it would hand the test dataset to a container or jail", "zoned", "jailed"),
    **_only(_enum("off"), _NO_KEY, "encryption"),
    **_only(_enum("none"), _NO_KEY, "keylocation", "keyformat"),
    **_refused(_NO_KEY, "pbkdf2iters"),
    **_only(_enum("none"), _SELINUX, "mlslabel", "context", "fscontext", "defcontext", "rootcontext"),
    **_refused("zfsperf creates file systems, never volumes (their device nodes appear on the host)",
               "volsize", "volblocksize"),
    "recordsize": Rule(ALLOWED, _recordsize),
    "compression": Rule(ALLOWED, _enum(*COMPRESSION, said="on, off, lzjb, gzip, gzip-1 … gzip-9, zle, lz4, zstd, "
                                       "zstd-1 … zstd-19, zstd-fast, zstd-fast-N")),
    "checksum": Rule(ALLOWED, _enum(*CHECKSUMS)),
    "dedup": Rule(ALLOWED, _enum(*DEDUP, said="on, off, verify, or a checksum with ,verify")),
    **_allowed(_enum("all", "none", "metadata"), "primarycache", "secondarycache", "prefetch"),
    "sync": Rule(ALLOWED, _enum("standard", "always", "disabled")),
    "logbias": Rule(ALLOWED, _enum("latency", "throughput")),
    "redundant_metadata": Rule(ALLOWED, _enum("all", "most", "some", "none")),
    "xattr": Rule(ALLOWED, _enum("on", "off", "sa", "dir")),
    "dnodesize": Rule(ALLOWED, _enum("legacy", "auto", "1k", "2k", "4k", "8k", "16k")),
    **_allowed(ONOFF, "atime", "relatime", "readonly", "exec", "setuid", "devices", "vscan", "nbmand", "utf8only",
               "overlay", "longname"),
    "snapdir": Rule(ALLOWED, _enum("hidden", "visible", "disabled")),
    "aclmode": Rule(ALLOWED, _enum("discard", "groupmask", "passthrough", "restricted")),
    "aclinherit": Rule(ALLOWED, _enum("discard", "noallow", "restricted", "passthrough", "passthrough-x")),
    "acltype": Rule(ALLOWED, _enum("off", "noacl", "nfsv4", "posix", "posixacl")),
    "copies": Rule(ALLOWED, _enum("1", "2", "3")),
    "version": Rule(ALLOWED, _enum("1", "2", "3", "4", "5", "current")),
    "normalization": Rule(ALLOWED, _enum("none", "formC", "formD", "formKC", "formKD")),
    "casesensitivity": Rule(ALLOWED, _enum("sensitive", "insensitive", "mixed")),
    "special_small_blocks": Rule(ALLOWED, _size(least=0, most=16 * MIB)),
    "direct": Rule(ALLOWED, _enum("disabled", "standard", "always")),
    **_allowed(_size("none"), "quota", "refquota", "reservation"),
    "refreservation": Rule(ALLOWED, _size("none", "auto")),
    **_allowed(_count("none"), "filesystem_limit", "snapshot_limit"),
    **_allowed(_enum("default", "full", "geom", "dev", "none"), "volmode"),   # volumes only: zfsperf makes none
    "snapdev": Rule(ALLOWED, _enum("hidden", "visible")),
}

POOL: dict[str, Rule] = {
    **_read_only("size", "capacity", "health", "guid", "free", "allocated", "expandsize", "freeing",
                 "fragmentation", "leaked", "checkpoint", "load_guid", "dedupratio", "bcloneused", "bclonesaved",
                 "bcloneratio", "dedup_table_size", "last_scrubbed_txg", "maxblocksize", "maxdnodesize"),
    **_refused("zfsperf chooses where its pools mount (a directory of its own for the run)", "altroot"),
    **_only(_enum("none"), "zfsperf creates every pool with a cache file of the run's own: a pool in the host's "
            "import cache is imported at its next boot", "cachefile"),
    **_refused("it names a boot file system of the host's", "bootfs"),
    "failmode": Rule(CONDITIONAL, _enum("wait", "continue"), "failmode=panic panics the host on a vdev failure"),
    **_allowed(ONOFF, "delegation", "autoreplace", "listsnapshots", "autoexpand", "autotrim", "multihost",
               "readonly"),
    "version": Rule(ALLOWED, _count(least=1, most=5000)),
    "ashift": Rule(ALLOWED, _enum("0", *(str(i) for i in range(9, 17)))),
    "comment": Rule(ALLOWED, _text(32)),
    "compatibility": Rule(ALLOWED, _names),
    "dedup_table_quota": Rule(ALLOWED, _size("none", "auto")),
    "dedupditto": Rule(ALLOWED, _count()),
}

FEATURE = Rule(ALLOWED, _enum("enabled", "disabled"))
USER = Rule(ALLOWED, _text(MAX_VALUE))


def rule(name: str, *, pool: bool) -> Rule | None:
    """The table's place for a property name (a pool's or a dataset's), or None when it has none."""
    if USER_PROP_RE.match(name):
        return None if name == OWN_MARK else USER
    if pool and name.startswith("feature@"):
        return FEATURE if re.fullmatch(r"feature@[a-z0-9_]+", name) else None
    return (POOL if pool else DATASET).get(name)


def problem(name: str, value: str, *, pool: bool = False) -> str | None:
    """Why `name=value` may not be set on a zfsperf test pool (pool=True) or dataset, or None."""
    what = "pool property" if pool else "dataset property"
    if name == OWN_MARK:
        return f"{name} is zfsperf's own ownership mark: a runfile cannot set it"
    r = rule(name, pool=pool)
    if r is None:
        return (f"{shown(name)} is not a {what} zfsperf places{did_you_mean(name, _settable(pool))} (it places every one "
                f"OpenZFS 2.1, 2.3 and zfs-fuse have that a test may set: {', '.join(sorted(_settable(pool)))})")
    if "\n" in value or "\0" in value or len(value) > MAX_VALUE:
        return f"{name}: {shown(value[:40])} is not a valid property value"
    if r.place == READ_ONLY:
        return f"{name} is a read-only statistic: it cannot be set"
    if r.place == REFUSED:
        return f"{name} is refused: {r.why}"
    assert r.check is not None
    why = r.check(value)
    if why is None:
        return None
    fuse = ZFS_FUSE_ENUMS.get(name) if not pool else None
    return (f"{name} {why}" + (f" ({r.why})" if r.place == CONDITIONAL and r.why else "")
            + (f"; zfs-fuse (pool v23, the default target) takes only {', '.join(fuse)}" if fuse else ""))


def _settable(pool: bool) -> list[str]:
    """The properties a runfile may set (pool or dataset)."""
    return [k for k, r in (POOL if pool else DATASET).items() if r.place in (ALLOWED, CONDITIONAL)]


# What zfs-fuse 0.7.0 (pool v23) takes, beside the table above: the property names its `zfs get all`
# and `zpool get all` print (tests/fixtures/zfs-fuse/, checked by tests/test_dry_run.py), and the values
# it refuses that OpenZFS takes (its own error text: `must be one of 'on | off | lzjb | gzip | gzip-[1-9] | zle'`)
ZFS_FUSE_DATASET = frozenset(
    "type creation used available referenced compressratio mounted quota reservation recordsize mountpoint "
    "sharenfs checksum compression atime devices exec setuid readonly zoned snapdir aclmode aclinherit canmount "
    "xattr copies version utf8only normalization casesensitivity vscan nbmand sharesmb refquota refreservation "
    "primarycache secondarycache usedbysnapshots usedbydataset usedbychildren usedbyrefreservation logbias dedup "
    "mlslabel".split())
ZFS_FUSE_POOL = frozenset(
    "size capacity altroot health guid version bootfs delegation autoreplace cachefile failmode listsnapshots "
    "autoexpand dedupditto dedupratio free allocated ashift".split())
ZFS_FUSE_ENUMS: dict[str, tuple[str, ...]] = {
    "compression": ("on", "off", "lzjb", "gzip", *(f"gzip-{i}" for i in range(1, 10)), "zle"),
    "checksum": ("on", "off", "fletcher2", "fletcher4", "sha256"),
    "dedup": ("on", "off", "verify", "sha256", "sha256,verify"),
    "xattr": ("on", "off"),
}
_ZFS_FUSE_VALUES: dict[str, Check] = {
    **{name: _enum(*values) for name, values in ZFS_FUSE_ENUMS.items()},
    "recordsize": lambda v: _recordsize(v) or (None if parse_size(v) <= 128 * 1024 else
                                                f"takes 512 to 128K (no large blocks), not {shown(v)}"),
    "version": _count(least=1, most=23),
}


def target_problem(impl: str, name: str, value: str, *, pool: bool = False) -> str | None:
    """Why the target's own ZFS (Target.impl) cannot take `name=value` though the table above
    allows it (zfs-fuse's pool v23: no lz4, no recordsize over 128K, no feature flags), or None.
    OpenZFS takes every value the table allows (its zfs create says what a pool's features lack)."""
    if impl != "zfs-fuse" or USER_PROP_RE.match(name):
        return None
    names = ZFS_FUSE_POOL if pool else ZFS_FUSE_DATASET
    if name not in names:
        return f"zfs-fuse (pool v23) has no {'pool' if pool else 'dataset'} property {name}"
    check = _ZFS_FUSE_VALUES.get(name)
    why = check(value) if check is not None else None
    return f"{name} on zfs-fuse (pool v23) {why}" if why else None
