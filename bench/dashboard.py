"""D1: the dashboard's board of 200 items in Chromium — first cards painted, every card, and a
live update on screen in another open browser after the mutation that caused it returned.

python -m bench.dashboard [--items 200] [--loads 5] [--updates 100] [--sqlite]

`caseway serve --demo` (one process) on a fresh PostgreSQL database (or SQLite), 200 items
created through the API in a subproject of the approval workflow, with amounts, due dates and
assignees. Playwright drives Debian's Chromium (the browser tests' flags); times are the page's
own clock (performance.now()):
- first cards / first render: from the start of navigation to the board (a full page load:
  HTML, scripts, the queries, React) until the first card, and until all 200 cards, are in the
  DOM, then the next animation frame;
- live update: a second browser context (another user's browser, no shared storage) sends
  executeAction (submit) for one card with fetch; the time from the response's arrival there
  until that card stands in the Submitted column of the watching page, then the next animation
  frame. Both pages' clocks are performance.timeOrigin + performance.now() (one machine). The
  watching page knows of the change only from its `activity` subscription.
Prints the results; bench/REPORT.md is written by hand from them.
"""

import argparse
import asyncio
import statistics
import tempfile
from pathlib import Path
from typing import Any

from bench.server import Serve, drop_postgres, fresh_postgres
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, why_not

CREATE_SUBPROJECT = """mutation($p: ID!) { createSubproject(input: {projectId: $p, displayName: "Bench board",
  currency: "EUR", workflow: "approval"}) { subproject { id } userErrors { message } } }"""
CREATE_ITEM = """mutation($input: CreateWorkflowItemInput!) { createWorkflowItem(input: $input) {
  workflowItem { id } userErrors { message } } }"""
SETUP = """{ viewer { id } projects(first: 1) { edges { node { id } } } }"""

# Marks the moment the board holds `count` cards (installed before any page script runs).
WATCH_BOARD = """(count) => {
  window.__boardAt = null;
  window.__firstCardAt = null;
  new MutationObserver((_, observer) => {
    const cards = document.querySelectorAll('[data-testid=card]').length;
    if (cards >= 1 && window.__firstCardAt === null) {
      window.__firstCardAt = -1;
      requestAnimationFrame(() => { window.__firstCardAt = performance.now(); });
    }
    if (cards >= count) {
      observer.disconnect();
      requestAnimationFrame(() => { window.__boardAt = performance.now(); });
    }
  }).observe(document, {childList: true, subtree: true});
}"""

# In the watching page: the epoch ms at which the card stands in Submitted (null after 10 s).
WATCH_CARD = """async (id) => {
  const placed = () => document.querySelector(`[data-testid=column][data-state=submitted] [data-item="${id}"]`);
  const shown = new Promise((resolve) => {
    const observer = new MutationObserver(() => {
      if (placed()) {
        observer.disconnect();
        requestAnimationFrame(() => resolve(performance.timeOrigin + performance.now()));
      }
    });
    observer.observe(document.body, {childList: true, subtree: true, attributes: true});
  });
  return Promise.race([shown, new Promise((r) => setTimeout(() => r(null), 10000))]);
}"""

# In the acting page: send the mutation, answer the epoch ms its response arrived.
ACT = """async ({id, token}) => {
  const response = await fetch('/graphql', {
    method: 'POST',
    headers: {'Content-Type': 'application/json', Authorization: `Bearer ${token}`},
    body: JSON.stringify({query: `mutation($id: ID!) { executeAction(input: {workflowItemId: $id, action: "submit"})
      { userErrors { message } } }`, variables: {id}}),
  });
  const body = await response.json();
  const returned = performance.timeOrigin + performance.now();
  if (body.errors || body.data.executeAction.userErrors.length) return {error: JSON.stringify(body)};
  return {returned};
}"""


def seed(server: Serve, token: str, items: int) -> tuple[str, list[str]]:
    setup = server.gql(SETUP, token=token)
    project = setup["projects"]["edges"][0]["node"]["id"]
    created = server.gql(CREATE_SUBPROJECT, {"p": project}, token=token)["createSubproject"]
    assert not created["userErrors"], created
    subproject = created["subproject"]["id"]
    ids = []
    for n in range(items):
        item = {
            "subprojectId": subproject,
            "displayName": f"Item {n:03}",
            "amountType": "ALLOCATED",
            "amount": f"{1000 + 37 * n}.50",
            "dueDate": f"2031-{1 + n % 12:02}-{1 + n % 28:02}",
            "assigneeId": setup["viewer"]["id"],
        }
        result = server.gql(CREATE_ITEM, {"input": item}, token=token)["createWorkflowItem"]
        assert not result["userErrors"], result
        ids.append(result["workflowItem"]["id"])
    return subproject, ids


def summary(values: list[float]) -> str:
    ordered = sorted(values)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]

    return (
        f"median {statistics.median(ordered):.0f} ms, p95 {pct(0.95):.0f} ms, p99 {pct(0.99):.0f} ms, "
        f"min {ordered[0]:.0f} ms, max {ordered[-1]:.0f} ms (n={len(ordered)})"
    )


async def measure(server: Serve, token: str, subproject: str, ids: list[str], loads: int, updates: int) -> None:
    from playwright.async_api import async_playwright

    board = f"{server.url}/#/subproject/{subproject}"
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = await browser.new_context(viewport={"width": 1400, "height": 900})
        await context.add_init_script(f"window.localStorage.setItem('caseway.token', {token!r})")
        await context.add_init_script(f"({WATCH_BOARD})({len(ids)})")
        page = await context.new_page()
        renders = []
        firsts = []
        for _ in range(loads + 1):  # the first load warms the HTTP cache, as a returning user's
            await page.goto("about:blank")
            await page.goto(board)
            await page.wait_for_function("() => window.__boardAt !== null", timeout=30_000)
            renders.append(await page.evaluate("() => window.__boardAt"))
            firsts.append(await page.evaluate("() => window.__firstCardAt"))
        await page.wait_for_function("() => document.body.dataset.live === 'live'")
        actor = await (await browser.new_context()).new_page()
        await actor.goto(f"{server.url}/health")  # same origin for fetch, no dashboard of its own
        latencies: list[float] = []
        missed = 0
        for item in ids[:updates]:
            watching = asyncio.ensure_future(page.evaluate(WATCH_CARD, item))
            await asyncio.sleep(0.05)  # the observer is in place before the mutation is sent
            acted: dict[str, Any] = await actor.evaluate(ACT, {"id": item, "token": token})
            if "error" in acted:
                raise SystemExit(f"D1: the mutation failed: {acted['error']}")
            shown = await watching
            if shown is None:
                missed += 1
            else:
                latencies.append(shown - acted["returned"])
        await browser.close()
    print(f"D1 first card painted, cold: {firsts[0]:.0f} ms; warm cache: {summary(firsts[1:])}  (budget <= 1000 ms)")
    print(f"D1 all {len(ids)} cards painted, cold: {renders[0]:.0f} ms; warm cache: {summary(renders[1:])}")
    print(
        f"D1 live update in another browser after the mutation returned: {summary(latencies)}  (budget p99 <= 500 ms)"
    )
    if missed:
        print(f"D1: {missed} updates did not reach the page within 10 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--updates", type=int, default=100)
    parser.add_argument("--sqlite", action="store_true", help="a SQLite file instead of PostgreSQL")
    args = parser.parse_args()
    reason = why_not()
    if reason:
        raise SystemExit(f"D1 cannot run: {reason}")
    name = None
    with tempfile.TemporaryDirectory() as scratch:
        if args.sqlite:
            url = f"sqlite:///{Path(scratch) / 'd1.db'}"
        else:
            url, name = asyncio.run(fresh_postgres("caseway_bench_d1"))
        server = Serve(url)
        try:
            token = server.login("alice")
            subproject, ids = seed(server, token, args.items)
            asyncio.run(measure(server, token, subproject, ids, args.loads, min(args.updates, args.items)))
        finally:
            server.stop()
            if name:
                asyncio.run(drop_postgres(name))


if __name__ == "__main__":
    main()
