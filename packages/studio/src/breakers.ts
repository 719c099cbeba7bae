/** Circuit-breaker states read from the gateway's Prometheus text (`/metrics`). */

/** Breaker state per connection, from the gateway's `janus_breaker_state` gauge (0 closed, 1 half-open, 2 open). */
export const parseBreakers = (metrics: string): Array<{ connection: string; state: string }> => {
  const names = ["closed", "half-open", "open"]
  const out: Array<{ connection: string; state: string }> = []
  for (const line of metrics.split("\n")) {
    const m = /^janus_breaker_state\{([^}]*)\}\s+([0-9.]+)/.exec(line)
    if (m === null) continue
    const connection = /connection="([^"]*)"/.exec(m[1]!)?.[1] ?? "?"
    out.push({ connection, state: names[Number(m[2])] ?? m[2]! })
  }
  return out
}
