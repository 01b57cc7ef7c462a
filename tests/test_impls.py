"""The implementations the zfs module picks at load (tunables/impls.py), from real OpenZFS output:
the kstat benchmark tables and the selector parameters of 2.1.11 and 2.3.2 (tests/fixtures).
The pins themselves are written to a real module in test_openzfs_guest.py (a load-scope sweep)."""

import json
from pathlib import Path

import pytest

from helpers import fixture
from zfsperf import proc
from zfsperf.errors import InputError
from zfsperf.runfile import loads
from zfsperf.fileops import LocalFiles
from zfsperf.tunables.backend import FileTunables
from zfsperf.tunables.impls import ImplPin, chksum_picks, chosen, fastest_row, offered, summary

SELECTORS_232 = {"icp_aes_impl", "icp_gcm_impl", "zfs_blake3_impl", "zfs_fletcher_4_impl", "zfs_sha256_impl",
                 "zfs_sha512_impl", "zfs_vdev_raidz_impl"}


def params(version: str) -> dict[str, str]:
    out = {}
    for ln in fixture(version, "zfs_module_parameters.txt").splitlines():
        name, _, value = ln.partition("\t")
        out[name] = value
    return out


def test_a_selector_reads_as_its_chosen_name_and_nothing_else_changes():
    p = params("openzfs-2.3.2")
    read = {k: chosen(v) for k, v in p.items()}
    assert {k for k in p if read[k] != p[k].strip()} == SELECTORS_232
    assert {read[k] for k in SELECTORS_232} == {"fastest"}
    assert offered(p["zfs_fletcher_4_impl"]) == ["fastest", "scalar", "superscalar", "superscalar4", "sse2",
                                                 "ssse3", "avx2"]
    # after a write the brackets move (fletcher_4_param_get's format); a list without them is a value
    assert chosen("fastest scalar [superscalar] superscalar4 sse2 ssse3 avx2 ") == "superscalar"
    assert chosen("a b c") == "a b c" and offered("1048576") == []


def test_each_benchmark_table_gives_the_pick_the_module_made():
    assert fastest_row(fixture("openzfs-2.1.11", "kstat_fletcher_4_bench_final.txt")) == {
        "native": "superscalar", "byteswap": "superscalar"}
    # 2.3.2 under TCG: sha256 fastest at 256 KiB is ssse3 (37 MiB/s) though x64 is faster at 64 KiB
    assert chksum_picks(fixture("openzfs-2.3.2", "kstat_chksum_bench_final.txt")) == {
        "sha256": "ssse3", "sha512": "x64", "blake3": "sse2"}
    rz = fastest_row(fixture("openzfs-2.3.2", "kstat_vdev_raidz_bench_final.txt"))
    assert rz["gen_p"] == "scalar" and rz["gen_pq"] == "avx2" and len(rz) == 10
    assert fastest_row("") == {} and chksum_picks("") == {}


class Sysfs(LocalFiles):
    """A directory of the 2.3.2 module's parameters whose selectors behave as the module's do
    (a write of a name it offers moves the brackets; any other is EINVAL)."""

    def write_param(self, path: str, text: str) -> None:
        old = Path(path).read_text()
        names = offered(old)
        if names:
            want = text.strip()
            if want not in names:
                raise OSError(22, "Invalid argument")
            text = " ".join(f"[{n}]" if n == want else n for n in names) + "\n"
        super().write_param(path, text)


def test_the_first_load_sets_the_pins_and_a_later_load_is_given_them(tmp_path):
    for name, value in params("openzfs-2.3.2").items():
        (tmp_path / name).write_text(value + "\n")
    sysfs = FileTunables(str(tmp_path), files=Sysfs())
    benches = {"fletcher_4_bench": fixture("openzfs-2.3.2", "kstat_fletcher_4_bench_final.txt"),
               "chksum_bench": fixture("openzfs-2.3.2", "kstat_chksum_bench_final.txt")}

    def run(argv):
        text = benches.get(argv[-1].rsplit("/", 1)[-1])
        return proc.Completed(argv, 0 if text is not None else 1, text or "", "" if text else "No such file", 0.0)

    stored: list[dict] = []                            # what the runner writes to run.json after each load
    pin = ImplPin(leave={"zfs_sha512_impl"}, on_load=stored.append)   # sha512: set by the run's tests
    first = pin.after_load(run, sysfs, "guest, build a")
    assert first["pinned"] == {"zfs_fletcher_4_impl": "superscalar", "zfs_sha256_impl": "ssse3",
                               "zfs_blake3_impl": "sse2"}
    assert sysfs.get("zfs_fletcher_4_impl") == "superscalar" and sysfs.get("zfs_sha512_impl") == "fastest"
    # the next load (the module back at "fastest") picked scalar: given the first load's pick
    (tmp_path / "zfs_fletcher_4_impl").write_text(params("openzfs-2.3.2")["zfs_fletcher_4_impl"] + "\n")
    benches["fletcher_4_bench"] = benches["fletcher_4_bench"].replace("fastest          superscalar",
                                                                      "fastest          scalar     ")
    second = pin.after_load(run, sysfs, "twin, build b")
    assert second["picks"]["fletcher4"] == "scalar" and second["pinned"]["zfs_fletcher_4_impl"] == "superscalar"
    assert sysfs.get("zfs_fletcher_4_impl") == "superscalar"
    # a build that does not offer the first load's pick keeps its own, and says so
    (tmp_path / "zfs_sha256_impl").write_text("cycle [fastest] generic x64\n")
    third = pin.after_load(run, sysfs, "guest, build c")
    assert "zfs_sha256_impl" not in third["pinned"] and "zfs_sha256_impl ssse3: not offered" in third["notes"][0]
    assert pin.as_dict()["pinned"]["zfs_sha256_impl"] == "ssse3" and pin.as_dict()["left"] == ["zfs_sha512_impl"]
    # the line a build verdict carries: the pins, and what differed among the picks left alone
    assert summary(pin.as_dict()) == (
        "each of the 3 module loads was given the first load's implementation picks: fletcher_4 superscalar, "
        "sha256 ssse3 (in 2 of 3: the others' builds did not offer it), blake3 sse2 (not pinned: zfs_sha512_impl set by the tests)")
    assert [len(x["loads"]) for x in stored] == [1, 2, 3] and stored[0]["pinned"] == first["pinned"], stored

    # --resume: the resumed part's loads are given the stored run's first load's picks, not their own
    again = ImplPin.resumed(json.loads(json.dumps(stored[0])), leave={"zfs_sha512_impl"})
    (tmp_path / "zfs_fletcher_4_impl").write_text(params("openzfs-2.3.2")["zfs_fletcher_4_impl"] + "\n")
    fourth = again.after_load(run, sysfs, "guest, build a (resumed)")
    assert fourth["picks"]["fletcher4"] == "scalar" and fourth["pinned"]["zfs_fletcher_4_impl"] == "superscalar"
    assert [ld["where"] for ld in again.as_dict()["loads"]] == ["guest, build a", "guest, build a (resumed)"]
    assert ImplPin.resumed({}, leave=set()).pinned == {}


def test_a_runfile_sets_a_selector_by_name_and_a_number_is_refused_at_its_line():
    base = '[[test]]\nname = "f"\nworkload = "fio"\nrw = "write"\nsize = "16M"\n'
    rf = loads(base + 'tunables = { zfs_fletcher_4_impl = ["scalar", "superscalar"] }\n', "rf.toml")
    assert [c.tunables["zfs_fletcher_4_impl"] for c in rf.cases()] == ["scalar", "superscalar"]
    with pytest.raises(InputError) as e:
        loads(base + "tunables = { zfs_vdev_raidz_impl = 4 }\n", "rf.toml")
    assert e.value.line == 6 and "zfs_vdev_raidz_impl takes the name of an implementation" in str(e.value), e.value
