/**
 * Generators of hostile `/mcp` requests for `hostile-input.test.ts`: on the
 * 2026-07-28 wire, well-formed tools/call requests (attempts) with hostile
 * names, arguments, ids and `_meta`, and broken envelopes apart from them
 * (headers that do not mirror the body, ids that are no ids, other methods,
 * raw bytes); on the 2025 wire, runs on live sessions (single calls and
 * 2025-03-26 batches, each counting its attempts), hostile `initialize`
 * requests, and requests with hostile session ids and `Last-Event-ID`.
 */
import { assert } from "@effect/vitest"
import fc from "fast-check"
import {
  headerValueOf,
  hostileHeader,
  hostileJson,
  hostileNumber,
  hostileString,
  type Json,
  RawNumber,
  toJson,
  type Wire
} from "./Hostile.ts"

/** The tools of the test gateway that reach its downstream (`get_pet`, …; `region_pet` binds `Mcp-Param-Region`). */
export const TOOLS = ["get_pet", "create_pet", "any_pet", "region_pet"] as const

export const JSON_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ["content-type", "application/json"],
  ["accept", "application/json, text/event-stream"]
]

// -----------------------------------------------------------------------------
// /mcp
// -----------------------------------------------------------------------------

/** A request id: hostile strings and finite numbers (2^64 too) are ids; a non-finite number is not. */
const validId: fc.Arbitrary<Json> = fc.oneof(
  fc.nat(1_000_000),
  hostileString,
  fc.constantFrom("18446744073709551616", "1".repeat(40), "-18446744073709551616").map((t) => new RawNumber(t))
)

export interface Call {
  readonly name: string
  readonly arguments: { readonly [key: string]: Json }
  /** The `Mcp-Param-Region` value (2026-07-28), for the tool that declares it. */
  readonly region?: string | undefined
  readonly id: Json
  readonly meta: { readonly [key: string]: Json }
}

/**
 * Well-formed tools/call requests with hostile names, arguments and `_meta`.
 * On 2026-07-28 `Mcp-Name` and `Mcp-Param-*` must mirror the name and the
 * region, and no header can carry a lone surrogate, so there those are
 * well-formed Unicode (a lone surrogate elsewhere is fine).
 */
export const call = (stateless: boolean): fc.Arbitrary<Call> => {
  const mirrored = stateless ? hostileString.map((s) => s.toWellFormed()) : hostileString
  return fc.record({
    name: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...TOOLS) }, { weight: 2, arbitrary: mirrored }),
    id: validId,
    meta: fc.dictionary(
      hostileString.filter((key) => !key.startsWith("io.modelcontextprotocol/") && key !== "progressToken"),
      hostileJson,
      { maxKeys: 2 }
    ),
    declared: fc.record({
      id: fc.oneof(hostileString, hostileJson),
      tag: hostileJson,
      "x-note": fc.oneof(hostileString, hostileJson),
      q: hostileJson,
      name: hostileJson,
      meta: hostileJson
    }, { requiredKeys: [] }),
    region: mirrored,
    extra: fc.dictionary(hostileString, hostileJson, { maxKeys: 3 })
  }).map(({ declared, extra, id, meta, name, region }) => ({
    name,
    id,
    meta,
    arguments: name === "region_pet" ? { ...extra, ...declared, region } : { ...extra, ...declared },
    region: name === "region_pet" ? region : undefined
  }))
}

const statelessMeta = (extra: { readonly [key: string]: Json }, clientInfo: Json = { name: "fuzz", version: "1" }) => ({
  ...extra,
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": clientInfo
})

export const statelessCall = (c: Call): Wire => ({
  method: "POST",
  path: "/mcp",
  headers: [
    ...JSON_HEADERS,
    ["mcp-protocol-version", "2026-07-28"],
    ["mcp-method", "tools/call"],
    ["mcp-name", headerValueOf(c.name)],
    ...(c.region === undefined ? [] : [["mcp-param-region", headerValueOf(c.region)] as const])
  ],
  body: toJson({
    jsonrpc: "2.0",
    id: c.id,
    method: "tools/call",
    params: { name: c.name, arguments: c.arguments, _meta: statelessMeta(c.meta) }
  })
})

const isObject = (json: Json): json is { readonly [key: string]: Json } =>
  typeof json === "object" && json !== null && !Array.isArray(json) && !(json instanceof RawNumber)

/** Broken envelopes on the 2026-07-28 wire: never attempts. */
export const statelessBroken: fc.Arbitrary<Wire> = fc.oneof(
  // a tools/call whose Mcp-Name, Mcp-Method or Mcp-Param-Region does not mirror it (raw hostile bytes too)
  fc.record({ c: call(true), value: hostileHeader, which: fc.constantFrom("name", "method", "param") }).map(
    ({ c, value, which }): Wire => {
      const mirror = (header: string, mirrored: string, broken: string) =>
        [header, which === header.slice(4) ? broken : mirrored] as const
      return {
        ...statelessCall(c),
        headers: [
          ...JSON_HEADERS,
          ["mcp-protocol-version", "2026-07-28"],
          mirror("mcp-method", "tools/call", value === "tools/call" ? "tools/list" : value),
          // no Region header to break: the name is broken instead
          which === "param" && c.region === undefined
            ? ["mcp-name", headerValueOf(`${c.name}x`)]
            : mirror("mcp-name", headerValueOf(c.name), value === c.name ? `${value}x` : value),
          ...(c.region === undefined ? [] : [mirror("mcp-param", headerValueOf(c.region), value)]).map((
            [, v]
          ) => ["mcp-param-region", v] as const)
        ]
      }
    }
  ),
  // an id that is no JSON-RPC id: not a finite number
  fc.record({ c: call(true), id: hostileNumber.filter((n) => !n.finite) }).map(({ c, id }) =>
    statelessCall({ ...c, id })
  ),
  // other methods, versions and names in headers, with hostile params
  fc.record({
    method: fc.oneof(
      fc.constantFrom("tools/list", "server/discover", "resources/read", "prompts/get", "ping", "subscriptions/listen"),
      hostileString
    ),
    params: fc.dictionary(hostileString, hostileJson, { maxKeys: 3 }),
    version: fc.oneof(fc.constant("2026-07-28"), hostileHeader),
    name: fc.option(hostileHeader, { nil: undefined }),
    id: fc.oneof(validId, hostileNumber)
  }).map(({ id, method, name, params, version }): Wire => ({
    method: "POST",
    path: "/mcp",
    headers: [
      ...JSON_HEADERS,
      ["mcp-protocol-version", version],
      ["mcp-method", method],
      ...(name === undefined ? [] : [["mcp-name", name] as const])
    ],
    body: toJson({ jsonrpc: "2.0", id, method, params: { ...params, _meta: statelessMeta({}) } })
  })),
  // a tools/call whose params, arguments or _meta do not have the shape the protocol fixes
  fc.record({ c: call(true), params: hostileJson, clientInfo: hostileJson, args: hostileJson }).map(
    ({ args, c, clientInfo, params }): Wire => ({
      ...statelessCall(c),
      body: toJson({
        jsonrpc: "2.0",
        id: c.id,
        method: "tools/call",
        params: isObject(params)
          ? {
            ...(params as { readonly [key: string]: Json }),
            name: c.name,
            arguments: isObject(args) ? new RawNumber("1e400") : args,
            _meta: statelessMeta(c.meta, clientInfo)
          }
          : params
      })
    })
  ),
  // raw hostile bytes in the request target and in another header
  fc.record({ target: hostileString, value: hostileHeader }).map(({ target, value }): Wire => ({
    method: "POST",
    path: `/mcp?${target}`,
    headers: [...JSON_HEADERS, ["mcp-protocol-version", "2026-07-28"], ["mcp-method", "ping"], ["x-fuzz", value]],
    body: toJson({ jsonrpc: "2.0", id: 1, method: "ping", params: { _meta: statelessMeta({}) } })
  }))
)

const initialize = (version: Json, clientInfo: Json, capabilities: Json = {}): Wire => ({
  method: "POST",
  path: "/mcp",
  headers: JSON_HEADERS,
  body: toJson({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: version, capabilities, clientInfo }
  })
})

export interface Session {
  readonly version: string
  readonly id: string
}

export const openSession = async (base: URL, version: string): Promise<Session> => {
  const response = await fetch(new URL("/mcp", base), {
    method: "POST",
    headers: Object.fromEntries(JSON_HEADERS),
    body: initialize(version, { name: "fuzz", version: "1" }).body!
  })
  await response.text()
  const id = response.headers.get("mcp-session-id")
  assert.isString(id, `initialize ${version} answered ${response.status} without a session`)
  const initialized = await fetch(new URL("/mcp", base), {
    method: "POST",
    headers: { ...Object.fromEntries(JSON_HEADERS), "mcp-session-id": id!, "mcp-protocol-version": version },
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })
  })
  await initialized.text()
  return { version, id: id! }
}

const onSession = (session: Session, body: string): Wire => ({
  method: "POST",
  path: "/mcp",
  headers: [...JSON_HEADERS, ["mcp-session-id", session.id], ["mcp-protocol-version", session.version]],
  body
})

const sessionMessage = (c: Call): Json => ({
  jsonrpc: "2.0",
  id: c.id,
  method: "tools/call",
  params: { name: c.name, arguments: c.arguments, _meta: c.meta }
})

/** What one 2025-era run sends, and how many tools/call attempts are among it. */
interface SessionRun {
  readonly wire: Wire
  readonly attempts: number
}

export const sessionRuns = (sessions: ReadonlyArray<Session>): fc.Arbitrary<SessionRun> => {
  const batchable = sessions.find((s) => s.version === "2025-03-26")!
  const otherMessage = fc.oneof(
    fc.record({ id: validId, method: fc.constantFrom("tools/list", "ping") }).map(({ id, method }) =>
      ({ jsonrpc: "2.0", id, method }) as Json
    ),
    hostileJson,
    // a tools/call whose id is no id
    fc.record({ c: call(false), id: hostileNumber.filter((n) => !n.finite) }).map(({ c, id }) =>
      ({ ...(sessionMessage(c) as object), id }) as Json
    )
  )
  return fc.oneof(
    // initialize with hostile clientInfo, capabilities and versions
    fc.record({
      version: fc.oneof(fc.constantFrom("2025-11-25", "2025-06-18", "2025-03-26"), hostileString, hostileNumber),
      clientInfo: fc.oneof(
        fc.record({ name: hostileString, version: hostileString, title: hostileString }, { requiredKeys: [] }),
        hostileJson
      ),
      capabilities: hostileJson
    }).map(({ capabilities, clientInfo, version }) => ({
      wire: initialize(version, clientInfo, capabilities),
      attempts: 0
    })),
    // one hostile call on a session
    fc.record({ session: fc.constantFrom(...sessions), c: call(false) }).map(({ c, session }) => ({
      wire: onSession(session, toJson(sessionMessage(c))),
      attempts: 1
    })),
    // a batch (2025-03-26): calls among other and broken messages
    fc.array(
      fc.oneof(
        call(false).map((c) => ({ message: sessionMessage(c), attempt: true })),
        otherMessage.map((message) => ({ message, attempt: false }))
      ),
      { minLength: 1, maxLength: 5 }
    ).map((items) => ({
      wire: onSession(batchable, toJson(items.map((i) => i.message))),
      attempts: items.filter((i) => i.attempt).length
    })),
    // hostile session ids and versions: no session, no attempt
    fc.record({ id: hostileHeader, version: hostileHeader, c: call(false) }).map(({ c, id, version }) => ({
      wire: onSession({ id, version }, toJson(sessionMessage(c))),
      attempts: 0
    })),
    // the GET stream and DELETE with hostile session ids and Last-Event-ID (never deleting a live session:
    // the calls on it are attempts)
    fc.record({
      method: fc.constantFrom("GET", "DELETE"),
      live: fc.constantFrom(...sessions.map((s) => s.id)),
      hostile: hostileHeader,
      useLive: fc.boolean(),
      last: fc.option(hostileHeader, { nil: undefined })
    }).map(({ hostile, last, live, method, useLive }) => ({
      id: method === "GET" && useLive ? live : hostile,
      last,
      method
    })).map((
      { id, last, method }
    ) => ({
      wire: {
        method,
        path: "/mcp",
        headers: [
          ["accept", "text/event-stream"],
          ["mcp-session-id", id],
          ["mcp-protocol-version", "2025-11-25"],
          ...(last === undefined ? [] : [["last-event-id", last] as const])
        ],
        statusOnly: true
      } satisfies Wire,
      attempts: 0
    }))
  )
}
