"""Targets: where ZFS lives, behind one Target interface (base.py).

- factory.py          open_target(spec): "auto", "zfs-fuse", "openzfs", "guest", ssh://…
- openzfs_linux.py    kernel OpenZFS on Linux (/proc/spl/kstat/zfs, /sys/module/zfs/parameters)
- openzfs_freebsd.py  kernel OpenZFS on FreeBSD (sysctl kstat.zfs.*, vfs.zfs.*)
- ssh.py              any of these on another machine, over one ssh link
- kstat.py            the parsers of what those interfaces print
The embedded zfs-fuse target lives with the rest of zfs-fuse in zfsperf.zfsfuse.
"""

from .base import Target

__all__ = ["Target"]
