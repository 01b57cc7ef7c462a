"""One number per figure in compare (issue 83): a row's old and new columns are the centre its
change is the ratio of, the title says which centre, and each case's headline is its first row,
shown once. The defects, from a real fio A/B in turns: `read_lat_p90 45.31 → 49.41 us −0.9 %`
(medians beside a change computed from the pairs, opposite signs), and the headline `iops` row 10 of
11 beside `read_iops`, the same values with another p. Stored directories: fast."""

from __future__ import annotations

import json
import math
from pathlib import Path

from helpers import zfsperf


def _fio_blocks(d: Path, a: list[float], b: list[float], lat_a: list[float], lat_b: list[float]) -> Path:
    """A stored interleaved fio run of two sweep points, block i holding iteration i of each: iops
    and read_iops alike (a read-only job), and a latency."""
    d.mkdir(parents=True)
    lines = []
    for arm, iops, lat in (("a", a, lat_a), ("b", b, lat_b)):
        for i, (v, lv) in enumerate(zip(iops, lat), 1):
            figs = {"read_iops": {"value": v, "unit": "IOPS"}, "read_lat_p90": {"value": lv, "unit": "us"},
                    "iops": {"value": v, "unit": "IOPS"}}
            lines.append({"test": "rr", "case": f"rr arm={arm}", "sweep": {"arm": arm}, "iteration": i,
                          "workload": "fio", "status": "PASS", "figures": figs, "start": 1000.0 + i})
    (d / "results.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    (d / "run.json").write_text(json.dumps({"format": 3, "host": "h", "start": 1.0,
                                            "cases": ["rr arm=a", "rr arm=b"], "selection": {"interleave": True}}))
    return d


# pairs whose medians move one way and whose paired ratios move the other: B is slower in the
# blocks where A was fast, faster where A was slow
A = [100.0, 300.0, 110.0, 290.0, 105.0, 310.0, 95.0, 305.0]
B = [150.0, 250.0, 160.0, 240.0, 155.0, 255.0, 150.0, 245.0]
LAT_A = [45.0, 20.0, 46.0, 21.0, 44.0, 19.0, 47.0, 20.5]
LAT_B = [30.0, 33.0, 31.0, 34.0, 29.0, 32.0, 30.5, 33.5]


def test_old_new_and_change_are_one_estimate_and_the_title_says_which(tmp_path):
    d = _fio_blocks(tmp_path / "run", A, B, LAT_A, LAT_B)
    res = zfsperf("compare", str(d), "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    changes = json.loads(res.stdout)["changes"]
    assert changes
    for ch in changes:
        assert ch["design"] == "paired" and ch["center"] == "pairs", ch
        ratio = ch["new_median"] / ch["old_median"]
        assert math.isclose((ratio - 1) * 100, ch["change_pct"], rel_tol=1e-9, abs_tol=1e-9), ch
        lo, hi = ch["ci_pct"]
        assert lo <= ch["change_pct"] <= hi, ch
    lat = next(c for c in changes if c["figure"] == "read_lat_p90")
    # the medians of the iterations move the other way: what the columns showed before
    import numpy as np
    assert (np.median(LAT_B) / np.median(LAT_A) - 1) * (lat["change_pct"]) < 0
    out = " ".join(zfsperf("compare", str(d)).stdout.split())
    assert "(old, new: geometric means of the pairs; change: new / old)" in out, out


def test_the_headline_is_the_first_row_and_its_twin_is_said_once(tmp_path):
    d = _fio_blocks(tmp_path / "run", A, B, LAT_A, LAT_B)
    js = json.loads(zfsperf("compare", str(d), "--json").stdout)
    figures = [c["figure"] for c in js["changes"]]
    assert figures == ["iops", "read_lat_p90"], figures
    out = zfsperf("compare", str(d)).stdout
    table = out.split("─")[-1].strip("\n").split("\n\n")[0]          # a row's first line names its figure
    rows = [ln.split()[0] for ln in table.splitlines() if ln.strip() and not ln.startswith("  ")]
    assert rows[:2] == ["iops", "read_lat_p90"], out
    assert "read_iops the same values as its headline iops, shown once" in " ".join(out.split()), out
