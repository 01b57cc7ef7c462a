"""Exact counts and the ZIL's counters in the history store (issue 73: "the new figures appear in
... the history store"): a behaviour change that keeps speed (a side's pool space per byte doubled,
as copies = 2 does) is a change point of its own in `zfsperf history`, where the speed series has
none. Runs replayed from a stored real results directory, their counts set per run."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from helpers import why, zfsperf

SRC = Path(__file__).parent / "fixtures" / "results-format2" / "receive-fio"


def replay(dst: Path, i: int, space: float, rng: random.Random) -> Path:
    """The stored run as the i-th of a history: started 10 min after the one before, its receive
    records given counts (pool space per byte `space`) and ZIL counters, its rates a seeded ±1 %
    apart from run to run."""
    shutil.copytree(SRC, dst)
    info = json.loads((dst / "run.json").read_text())
    info["start"] = info.get("start", 0) + 600 * (i + 1)
    (dst / "run.json").write_text(json.dumps(info))
    f = 1 + rng.gauss(0, 0.01)
    out = []
    for line in (dst / "results.jsonl").read_text().splitlines():
        rec = json.loads(line)
        for fig in (rec.get("figures") or {}).values():
            fig["value"] *= f if fig["unit"].endswith("/s") else 1
        if rec["workload"] == "receive" and rec["status"] == "PASS":
            rec["counts"] = {"space_per_byte": space, "payload_per_round": 16777216.0, "records_per_round": 128.0,
                             "logical_bytes": 33554432.0}
            rec["zil"] = {"zil_commit_count": 7.0, "zil_itx_count": 40.0}
        out.append(json.dumps(rec))
    (dst / "results.jsonl").write_text("\n".join(out) + "\n")
    return dst


def test_a_count_that_changed_is_a_change_point_where_speed_has_none(tmp_path):
    rng = random.Random(73)
    runs = [replay(tmp_path / f"r{i:02d}", i, 1.03 if i < 10 else 2.04, rng) for i in range(16)]
    store = str(tmp_path / "h.sqlite")
    res = zfsperf("history", "import", *map(str, runs), "--store", store)
    assert res.returncode == 0 and "16 run(s) added" in res.stdout, why(res)
    out = json.loads(zfsperf("history", "--store", store, "--json", "--min-change", "25").stdout)
    by = {(s["case"], s["figure"]): s for s in out["series"]}
    count = by[("receive threads=1", "count_space_per_byte")]
    assert count["unit"] == "B/B" and [r["value"] for r in count["runs"]][9:11] == [1.03, 2.04], count["runs"]
    (cp,) = count["change_points"]
    assert cp["index"] == 10 and cp["verdict"] == "changed" and cp["change_pct"] > 90, cp
    assert by[("receive threads=1", "count_payload_per_round")]["change_points"] == []
    assert by[("receive threads=1", "zil_commit_count")]["unit"] == "count"
    assert ("receive threads=1", "count_logical_bytes") not in by          # the denominator, never a series
    assert by[("receive threads=1", "throughput")]["change_points"] == []  # the speed kept
    assert not any(f.startswith("count_") for c, f in by if c == "randread")     # fio records had none
