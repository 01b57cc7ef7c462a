import pytest

from zfsperf.units import format_duration, parse_duration, parse_human, parse_size



@pytest.mark.parametrize("text,expected", [
    ("512", 512), ("128K", 131072), ("1M", 1048576), ("2G", 2 << 30), ("1.5G", 3 << 29), ("256MiB", 256 << 20),
    ("4k", 4096), (4096, 4096),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "12Q", "-1M", "M", "1 2", True])
def test_parse_size_rejects(bad):
    with pytest.raises(ValueError):
        parse_size(bad)


@pytest.mark.parametrize("text,expected", [("90", 90), ("90s", 90), ("20m", 1200), ("1h30m", 5400),
                                           ("250ms", 0.25), (5, 5.0)])
def test_parse_duration(text, expected):
    assert parse_duration(text) == pytest.approx(expected)


@pytest.mark.parametrize("bad", ["", "5 minutes", "m", "1x"])
def test_parse_duration_rejects(bad):
    with pytest.raises(ValueError):
        parse_duration(bad)


def test_parse_human_zpool_numbers():
    assert parse_human("616K") == 616 * 1024
    assert parse_human("1.35K") == pytest.approx(1382.4)
    assert parse_human("-") is None
    assert parse_human("140") == 140


def test_format_duration():
    assert format_duration(12) == "00:12"
    assert format_duration(3725) == "01:02:05"
