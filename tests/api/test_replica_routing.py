"""Which replica a read may use (models/replicas.py), without a cluster: the choice among replicas
by state, lag and replayed position, and how a lag is dated from the primary's positions. The
same rules against a real primary and a delayed replica: tests/e2e/test_replicas.py."""

from unittest import mock

import pytest

from models.replicas import Replica, ReplicaSet, format_lsn, parse_lsn


def _replica(name: str, *, replayed: int, lag_ms: float | None, healthy: bool = True) -> Replica:
    return Replica(
        url=f"postgresql://x/{name}",
        engine=mock.Mock(),
        sessionmaker=mock.Mock(),
        name=name,
        replayed=replayed,
        lag_ms=lag_ms,
        healthy=healthy,
    )


def test_wal_positions_read_and_write_as_postgresql_writes_them():
    assert parse_lsn("16/B374D848") == (0x16 << 32) + 0xB374D848
    assert format_lsn(parse_lsn("16/B374D848")) == "16/B374D848"
    assert parse_lsn("0/0") == 0
    for wrong in ("", "yesterday", "16-B374D848", "1/2/3", "123456789/0", None):
        assert parse_lsn(wrong) is None


def test_a_read_goes_round_robin_to_replicas_far_enough_along_within_the_lag_limit():
    behind = _replica("behind", replayed=100, lag_ms=10)
    a = _replica("a", replayed=500, lag_ms=10)
    lagging = _replica("lagging", replayed=900, lag_ms=5_000)
    down = _replica("down", replayed=900, lag_ms=0, healthy=False)
    unmeasured = _replica("unmeasured", replayed=900, lag_ms=None)
    b = _replica("b", replayed=700, lag_ms=999)
    replicas = ReplicaSet(replicas=[behind, a, lagging, down, unmeasured, b], max_lag_ms=1000)
    assert [replicas.choose(after=200).name for _ in range(4)] == ["a", "b", "a", "b"]
    assert replicas.choose(after=600).name == "b"  # a has not replayed 600 yet
    assert replicas.choose(after=800) is None  # none far enough along and within the limit: the primary
    assert (a.reads, b.reads) == (2, 3)


def test_a_replica_that_fails_a_read_is_left_out_until_the_monitor_finds_it_again():
    only = _replica("only", replayed=10, lag_ms=0)
    replicas = ReplicaSet(replicas=[only], max_lag_ms=1000)
    assert replicas.choose(after=0) is only
    replicas.failed(only, ConnectionRefusedError("connection refused"))
    assert replicas.choose(after=0) is None
    assert replicas.report() == {
        "only": {"state": "down", "lag_ms": 0, "problem": "ConnectionRefusedError: connection refused"}
    }


@pytest.mark.parametrize(
    ("replayed", "lag_ms"),
    [
        (300, 0.0),  # everything the primary was seen to have
        (250, 3000.0),  # lacks what the primary had from t=7 on
        (150, 5000.0),  # lacks what it had from t=5 on
        (50, 10000.0),  # lacks everything seen: at least as old as the oldest position kept
    ],
)
def test_a_lag_is_how_long_the_primary_has_had_wal_the_replica_has_not_replayed(replayed, lag_ms):
    replicas = ReplicaSet(replicas=[], max_lag_ms=1000)
    replicas._history.extend([(0.0, 100), (5.0, 200), (7.0, 300)])
    assert replicas._lag_ms(replayed, now=10.0) == lag_ms
