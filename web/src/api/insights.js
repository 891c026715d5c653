// The Insights view's documents (docs/api.md, "Insights").
export const INSIGHTS_SUBPROJECT = `query InsightsSubproject($id: ID!) {
  node(id: $id) {
    ... on Subproject {
      id displayName project { id displayName }
      workflow { id shortName prettyName version diagram }
    }
  }
}`;

export const INSIGHTS = `query Insights($input: InsightsInput!, $interval: InsightsInterval) {
  insights(input: $input) {
    from to
    states { state { shortName prettyName } scope { shortName } entered inStateNow oldestSince
      timeInState { count p50 p90 mean max } }
    cycleTime { completed p50 p90 mean bins { upTo count } }
    openAge { open p50 p90 }
    throughput(interval: $interval) { start started completed }
    rework { state { shortName } scope { shortName } returned cases }
    overdue { open late }
    userErrors { code message field }
  }
}`;
