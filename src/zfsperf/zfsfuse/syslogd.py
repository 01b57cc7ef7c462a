"""A tiny syslog listener: zfs-fuse logs only through syslog(3), and many machines have no /dev/log.

`python -m zfsperf.zfsfuse.syslogd SOCKET LOGFILE` receives datagrams on SOCKET and appends them,
time-stamped and without the <priority> prefix, to LOGFILE.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import sys
import time

_PRI = re.compile(rb"^<\d+>")


def main() -> int:
    sock_path, log_path = sys.argv[1], sys.argv[2]
    if os.path.exists(sock_path):
        os.unlink(sock_path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(sock_path)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with open(log_path, "ab", buffering=0) as f:
        while True:
            data = s.recv(65536)
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S").encode()
            f.write(stamp + b" " + _PRI.sub(b"", data).rstrip(b"\n") + b"\n")


if __name__ == "__main__":
    sys.exit(main())
