/**
 * Which cached resources a live frame invalidates (the live-update reducer).
 *
 * **Rules**
 *
 * - A resource key is a list (`connections`) or one item (`connections/<id>`).
 * - A change signal `{topic, about}` refetches only keys of its topic's
 *   resources that are on screen: the list, and the items named in `about`
 *   (every item of that kind when `about` is empty: "some or all changed").
 * - A `resync` refetches every key on screen.
 * - An event with data on topic `calls` refetches nothing: it is applied to
 *   the live views (overview, audit tail) directly, with no request.
 */

/** The change-signal topics the gateway announces (storage's `ChangeKind`, plus `tools` and `upstream`). */
export const topicResources: Readonly<Record<string, ReadonlyArray<string>>> = {
  connection: ["connections", "tools", "breakers", "upstreams"],
  endpoint: ["endpoints", "tools"],
  virtual_server: ["virtual-servers", "tools"],
  client_token: ["client-tokens"],
  admin_token: ["admin-tokens"],
  secret: ["secrets"],
  tools: ["tools"],
  // an upstream MCP server's state changed on some replica (health, channel, pid)
  upstream: ["upstreams"]
}

export type LiveFrame =
  | { readonly _tag: "signal"; readonly topic: string; readonly about: ReadonlyArray<string> }
  | { readonly _tag: "event"; readonly topic: string; readonly data: unknown }
  | { readonly _tag: "resync" }

/** The keys on screen that `frame` makes stale, each once, in on-screen order. */
export const staleKeys = (frame: LiveFrame, onScreen: Iterable<string>): Array<string> => {
  const keys = [...new Set(onScreen)]
  if (frame._tag === "resync") return keys
  if (frame._tag === "event") return []
  const resources = topicResources[frame.topic] ?? []
  const about = new Set(frame.about)
  return keys.filter((key) => {
    const slash = key.indexOf("/")
    const resource = slash === -1 ? key : key.slice(0, slash)
    if (!resources.includes(resource)) return false
    if (slash === -1) return true
    // an item: only when named, or when the signal names no ids; `tools` is about names, not ids
    return about.size === 0 || about.has(key.slice(slash + 1)) || resource === "tools"
  })
}

/** Decodes an SSE frame of `GET /api/v1/events` (`event`, `signal`, `resync`); others are `undefined`. */
export const decodeFrame = (event: string, data: string): LiveFrame | undefined => {
  if (event === "resync") return { _tag: "resync" }
  if (event !== "event" && event !== "signal") return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(data)
  } catch {
    return undefined
  }
  if (typeof parsed !== "object" || parsed === null) return undefined
  const record = parsed as { topic?: unknown; about?: unknown; data?: unknown }
  if (typeof record.topic !== "string") return undefined
  if (event === "event") return { _tag: "event", topic: record.topic, data: record.data }
  const about = Array.isArray(record.about) ? record.about.filter((a): a is string => typeof a === "string") : []
  return { _tag: "signal", topic: record.topic, about }
}
