"""zfsperf: a performance test suite for ZFS."""

__version__ = "0.1.0"
