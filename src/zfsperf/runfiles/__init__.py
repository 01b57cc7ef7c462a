"""Built-in runfiles (`zfsperf run -r NAME`)."""
