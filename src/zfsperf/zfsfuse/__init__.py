"""The embedded zfs-fuse: everything zfsperf knows about it in one place.

- daemon.py   the "lab": a private zfs-fuse daemon in its own mount namespace (start, find,
              recover, stop; pidfile and syslog traps, stale mounts after a kill)
- nsholder.py the process that holds the lab's mount namespace (`python -m zfsperf.zfsfuse.nsholder`)
- syslogd.py  the lab's syslog socket: zfs-fuse logs only to syslog (`python -m zfsperf.zfsfuse.syslogd`)
- target.py   ZfsFuseTarget: the Target for a lab (kstats under /zfs-kstat, no run-time tunables)
"""
