"""A store's password is never recorded or printed, libpq's own ways to pass it work, and a store
that cannot take the run is refused before the first case -- against a real PostgreSQL server
that demands passwords (scram-sha-256)."""

import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from helpers import why
from helpers import pg_cluster, zfsperf
from helpers import last_dir, write_runfile

SECRET = "Zp-s3cr3t-4711"
RUNFILE = """
[defaults]
iterations = 1
[defaults.pool]
vdevs = 1
vdev_size = "128M"
[[test]]
name = "fio"
workload = "fio"
rw = "randread"
bs = "4k"
size = "4M"
runtime = 1
"""


@pytest.fixture(scope="module")
def pg():
    with pg_cluster("scram-sha-256") as c:
        c.sql(f"CREATE ROLE bench LOGIN PASSWORD '{SECRET}'")
        c.sql("ALTER DATABASE zfsperf OWNER TO bench")      # bench creates the schema in public
        yield c


@pytest.fixture(scope="module")
def a_run(lab, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("secrets")
    res = zfsperf("run", "-q", "-r", str(write_runfile(tmp, RUNFILE)), "-o", str(tmp / "res"), "--no-history")
    assert res.returncode == 0, why(res)
    return last_dir(res.stdout)


def _no_secret_anywhere(*roots: Path, texts: tuple[str, ...] = ()) -> None:
    for t in texts:
        assert SECRET not in t, t
    for root in roots:
        for f in root.rglob("*"):
            if f.is_file():
                assert SECRET.encode() not in f.read_bytes(), f


def test_password_in_the_url_is_never_recorded_or_printed(pg, lab, tmp_path):
    url = pg.url("bench", "zfsperf", SECRET)
    rf = write_runfile(tmp_path, RUNFILE)
    res = zfsperf("run", "-I", "1", "-r", str(rf), "-o", str(tmp_path / "res"), "--store", url)
    assert res.returncode == 0, why(res)
    assert "History:\tadded to postgresql://bench:***@/zfsperf?host=" in res.stdout, res.stdout
    d = last_dir(res.stdout)
    import json
    info = json.loads((d / "run.json").read_text())
    assert "postgresql://bench:***@" in " ".join(info["command_line"])
    assert info["history_store"].startswith("postgresql://bench:***@")
    hist = zfsperf("history", "--store", url, "--json")
    assert hist.returncode == 0, hist.stderr
    assert '"store": "postgresql://bench:***@' in hist.stdout
    state = Path(os.environ["ZFSPERF_STATE"])
    _no_secret_anywhere(tmp_path, state, texts=(res.stdout, res.stderr, hist.stdout, hist.stderr))
    with psycopg.connect(url) as conn:                     # the store's own rows
        rows = conn.execute("SELECT * FROM runs").fetchall()
    assert rows and SECRET not in repr(rows)


def test_libpq_ways_to_pass_the_password(pg, a_run, tmp_path):
    bare = pg.url("bench", "zfsperf")                     # no password in the URL
    # none at all: refused before anything is run
    res = zfsperf("run", "-r", str(write_runfile(tmp_path, RUNFILE)), "-o", str(tmp_path / "res"), "--store", bare)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "--store: the history store cannot take this run" in res.stderr
    assert not (tmp_path / "res").exists()
    # PGPASSWORD
    res = zfsperf("history", "import", str(a_run), "--store", bare, env={"PGPASSWORD": SECRET})
    assert res.returncode == 0, res.stderr
    # a pgpass file (PGPASSFILE, or ~/.pgpass), which libpq reads only when no one else can
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"*:*:zfsperf:bench:{SECRET}\n")
    pgpass.chmod(0o600)
    res = zfsperf("history", "--store", bare, "--json", env={"PGPASSFILE": str(pgpass)})
    assert res.returncode == 0 and '"runs"' in res.stdout, res.stderr
    # a service in pg_service.conf (PGSERVICEFILE) named by the URL, the password from pgpass
    svc = tmp_path / "pg_service.conf"
    svc.write_text(f"[bench]\nhost={pg.sock}\nport={pg.port}\ndbname=zfsperf\nuser=bench\n")
    res = zfsperf("history", "--store", "postgresql:///?service=bench", "--json",
                  env={"PGSERVICEFILE": str(svc), "PGPASSFILE": str(pgpass)})
    assert res.returncode == 0 and '"runs"' in res.stdout, res.stderr
    # and a run added through ZFSPERF_STORE + PGSERVICE: nothing secret on any command line
    res = zfsperf("run", "-q", "-r", str(write_runfile(tmp_path, RUNFILE)), "-o", str(tmp_path / "res2"),
                  env={"ZFSPERF_STORE": "postgresql://", "PGSERVICE": "bench", "PGSERVICEFILE": str(svc),
                       "PGPASSFILE": str(pgpass)})
    assert res.returncode == 0 and "History:\tadded to postgresql://" in res.stdout, res.stdout + res.stderr


@pytest.mark.parametrize("which", ["wrong password", "unreachable socket", "unreachable host"])
def test_a_store_that_cannot_take_the_run_is_refused_before_the_first_case(which, pg, tmp_path):
    url = {"wrong password": pg.url("bench", "zfsperf", SECRET + "x"),
           "unreachable socket": f"postgresql://bench:{SECRET}@/zfsperf?host={tmp_path}/nosock&port=1",
           "unreachable host": f"postgresql://bench:{SECRET}@127.0.0.1:9/zfsperf"}[which]
    t0 = time.monotonic()
    res = zfsperf("run", "-r", str(write_runfile(tmp_path, RUNFILE)), "-o", str(tmp_path / "res"), "--store", url)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "--store: the history store cannot take this run" in res.stderr
    assert "Starting ZFS target" not in res.stdout and not (tmp_path / "res").exists()
    assert time.monotonic() - t0 < 30
    _no_secret_anywhere(tmp_path, texts=(res.stdout, res.stderr))


def test_a_store_lost_during_the_run_is_an_error_at_the_end(lab, tmp_path):
    rf = write_runfile(tmp_path, RUNFILE.replace("iterations = 1", "iterations = 3").replace("runtime = 1",
                                                                                            "runtime = 2"))
    with pg_cluster() as c:
        p = subprocess.Popen([sys.executable, "-m", "zfsperf.cli", "run", "-r", str(rf), "-o", str(tmp_path / "res"),
                              "--store", c.url("postgres", "zfsperf")], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        first = p.stdout.readline()
        while first and not first.startswith("Starting ZFS target"):     # the store was checked by now
            first = p.stdout.readline()
        c.stop()                                                          # the server goes away
        out, err = p.communicate(timeout=300)
    assert p.returncode == 4, out + err
    assert "History:\tNOT added to postgresql://postgres@" in out
    assert "this run is not in the history" in out
    assert out.count("[PASS]") == 3
