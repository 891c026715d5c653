"""``Job.canRetry`` and ``Job.canResume``, which the dashboard shows its Retry and Resume buttons
by, say for every actor of the authorization matrix's scene what ``retryJob`` and ``resumeJob``
answer them (tests/fixtures/authorization.py's rows): true exactly where the lever is DONE; an
actor who may not see the job cannot ask (hidden ≡ missing)."""

from tests.fixtures.authorization import ACTORS, DONE, MUTATIONS
from tests.fixtures.authorization_scene import build_scene, outcome

LEVERS = """query($failed: ID!, $stalled: ID!) {
  failed: node(id: $failed) { ... on Job { state canRetry canResume } }
  stalled: node(id: $stalled) { ... on Job { state canRetry canResume } } }"""


async def test_the_levers_shown_are_those_that_would_work(gql, db, make_user):
    ids = {}
    for name in ACTORS:
        ids[name], _ = await make_user(name, admin=name == "admin")
    ids["victim"], _ = await make_user("victim")
    scene = await build_scene(gql, db, ids)
    jobs = {"failed": scene.failed_job, "stalled": scene.stalled_job}

    shown = {}
    for actor in ACTORS:
        read = await gql(LEVERS, jobs, token=scene.tokens[actor])
        shown[actor] = read
        if read["failed"] is None:  # hidden: the lever is refused as for a job that does not exist
            assert read["stalled"] is None
            assert MUTATIONS["retryJob"].expected(actor) != DONE and MUTATIONS["resumeJob"].expected(actor) != DONE
            continue
        assert read["failed"] == {
            "state": "FAILED",
            "canRetry": MUTATIONS["retryJob"].expected(actor) == DONE,
            "canResume": False,  # not STALLED: resumeJob would refuse it to anyone
        }, actor
        assert read["stalled"] == {
            "state": "STALLED",
            "canRetry": False,
            "canResume": MUTATIONS["resumeJob"].expected(actor) == DONE,
        }, actor
    # The scene holds both answers: someone who sees the jobs and may pull, and one who may not.
    assert shown["owner"]["failed"]["canRetry"] and shown["admin"]["stalled"]["canResume"]
    assert shown["player"]["failed"] == {"state": "FAILED", "canRetry": False, "canResume": False}
    assert shown["stranger"]["failed"] is None

    # And what is shown is what the lever does: the player is refused, the owner's retry works.
    player, owner = scene.tokens["player"], scene.tokens["owner"]
    assert await outcome(gql, "retryJob", MUTATIONS["retryJob"], scene, player) == "NOT_ALLOWED"
    assert await outcome(gql, "retryJob", MUTATIONS["retryJob"], scene, owner) == DONE
    after = await gql(LEVERS, jobs, token=owner)
    assert after["failed"] == {"state": "PENDING", "canRetry": False, "canResume": False}
