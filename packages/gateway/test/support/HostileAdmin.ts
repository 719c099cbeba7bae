/**
 * Generators of hostile `/api/v1` requests for `hostile-input.test.ts`: for
 * every resource, valid create and update bodies carrying hostile free text
 * with 0 to 2 members replaced by hostile values (strings, number tokens such
 * as 1e400, JSON), reads, deletes and revocations at hostile paths with
 * hostile `If-Match`, list and audit queries with hostile parameters, OpenAPI
 * imports, and the events stream with hostile topics and `Last-Event-ID`.
 */
import fc from "fast-check"
import {
  freeText,
  hostileHeader,
  hostileJson,
  hostileNat,
  hostileNumber,
  hostileString,
  type Json,
  mutated,
  percentEncode,
  toJson,
  type Wire
} from "./Hostile.ts"

/** What the admin requests may touch: an admin token and, per collection, one resource of the playground. */
export interface AdminTarget {
  readonly adminToken: string
  /** By collection (`connections`, `endpoints`, …): the id (or secret name) of a resource the fuzz may change. */
  readonly playground: Readonly<Record<string, string>>
}

const resourceName = fc.stringMatching(/^[a-z][a-z0-9_.-]{0,12}$/)
const toolName = fc.stringMatching(/^[a-z][a-z0-9_]{0,12}$/)

/** Valid bodies with hostile free text (0 to 2 members then replaced by hostile values). */
const bodies = (playground: AdminTarget["playground"]): Record<string, fc.Arbitrary<Json>> => ({
  connections: mutated(fc.record({
    kind: fc.constant("rest"),
    name: resourceName,
    description: freeText,
    baseUrl: fc.constantFrom("https://api.example.com/v1", "https://api.example.com"),
    auth: fc.oneof(
      fc.constant({ scheme: "none" }),
      fc.record({ scheme: fc.constant("header"), header: fc.constant("X-Api-Key"), secret: fc.constant("s1") }),
      fc.record({ scheme: fc.constant("basic"), username: freeText, secret: fc.constant("s1") })
    ),
    timeoutMs: hostileNat(60_000),
    retry: fc.record({ maxAttempts: hostileNat(5), initialDelayMs: hostileNat(1_000), maxDelayMs: hostileNat(5_000) }),
    breaker: fc.record({ consecutiveFailures: hostileNat(100), openMs: hostileNat(60_000) }),
    egressAllowList: fc.array(fc.oneof(fc.constantFrom("10.0.0.0/8", ".example.com"), freeText), {
      maxLength: 2
    })
  })),
  endpoints: mutated(fc.record({
    connectionId: fc.constant(playground.connections!),
    name: toolName,
    description: freeText,
    method: fc.constantFrom("GET", "POST", "DELETE"),
    pathTemplate: fc.constant("/things/{id}"),
    arguments: fc.record({ id: fc.constant("path"), q: fc.constantFrom("query", "header", "body") }),
    inputSchema: fc.record({
      type: fc.constant("object"),
      description: freeText,
      properties: fc.record({
        id: fc.record({ type: fc.constant("string"), description: freeText, maxLength: hostileNat(100) }),
        q: hostileJson
      }),
      required: fc.constant(["id"])
    }),
    idempotent: fc.boolean()
  })),
  "virtual-servers": mutated(fc.record({
    name: resourceName,
    description: freeText,
    tools: fc.array(fc.oneof(fc.constant("playground_tool"), freeText), { maxLength: 3 })
  })),
  "client-tokens": mutated(fc.record({
    name: freeText,
    allowedTools: fc.array(fc.oneof(fc.constant("playground_tool"), freeText), { maxLength: 2 }),
    allowedVirtualServers: fc.constant(["playground-vs"]),
    expiresAt: fc.constantFrom("2099-01-01T00:00:00Z", "-271821-04-20T00:00:00Z", "+275760-09-13T00:00:00Z")
  })),
  "admin-tokens": mutated(fc.record({ name: freeText })),
  secrets: mutated(fc.record({ value: freeText })),
  "openapi/import": mutated(fc.record({
    source: fc.record({ title: freeText, operationId: freeText, path: freeText }).map((doc) => ({
      text: JSON.stringify({
        openapi: "3.0.3",
        info: { title: doc.title, version: "1" },
        servers: [{ url: "https://api.example.com" }],
        paths: { [`/p/${doc.path}`]: { get: { operationId: doc.operationId, description: doc.title } } }
      })
    })),
    connection: fc.record({ name: resourceName, description: freeText, timeoutMs: hostileNat(60_000) }),
    options: fc.record({ namePrefix: freeText, tags: fc.array(freeText, { maxLength: 2 }) }, {
      requiredKeys: []
    })
  }))
})

/** A path segment: an existing id, or hostile text as percent-encoded bytes (lone surrogates stay invalid UTF-8). */
const segment = (existing: string) =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constant(existing) },
    { weight: 3, arbitrary: hostileString.map(percentEncode) },
    { weight: 1, arbitrary: hostileNumber.map((n) => percentEncode(n.token)) }
  )

const query = (names: ReadonlyArray<string>) =>
  fc.array(
    fc.tuple(
      fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: hostileString }),
      fc.oneof(hostileString, hostileNumber.map((n) => n.token), fc.constantFrom("-271821-04-20T00:00:00Z", "ok"))
    ),
    { maxLength: 4 }
  ).map((pairs) =>
    pairs.length === 0 ? "" : "?" + pairs.map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`).join("&")
  )

export const adminRequest = (fixture: AdminTarget): fc.Arbitrary<Wire> => {
  const { playground } = fixture
  const byCollection = bodies(playground)
  const auth = [["authorization", `Bearer ${fixture.adminToken}`]] as const
  const json = [...auth, ["content-type", "application/json"]] as const
  const ifMatch = fc.option(fc.oneof(hostileHeader, hostileNat(5).map((n) => `"${n.token}"`)), { nil: undefined })
  const precondition = (value: string | undefined) => value === undefined ? [] : [["if-match", value] as const]
  const collection = fc.constantFrom(...Object.keys(playground))
  const writable = fc.constantFrom("connections", "endpoints", "virtual-servers")
  return fc.oneof(
    // create
    collection.chain((c) =>
      byCollection[c]!.map((body): Wire => ({
        method: c === "secrets" ? "PUT" : "POST",
        path: c === "secrets" ? `/api/v1/secrets/${playground.secrets}` : `/api/v1/${c}`,
        headers: json,
        body: toJson(body)
      }))
    ),
    // update a playground resource (or a hostile id) with hostile bodies and preconditions
    fc.record({ c: writable, method: fc.constantFrom("PUT", "PATCH"), ifMatch }).chain(({ c, ifMatch, method }) =>
      fc.record({ id: segment(playground[c]!), body: byCollection[c]! }).map(({ body, id }): Wire => ({
        method,
        path: `/api/v1/${c}/${id}`,
        headers: [
          ...auth,
          ["content-type", method === "PATCH" ? "application/merge-patch+json" : "application/json"],
          ...precondition(ifMatch)
        ],
        body: toJson(body)
      }))
    ),
    // reads, deletes and revocations at hostile paths
    fc.record({
      c: collection,
      method: fc.constantFrom("GET", "DELETE", "POST"),
      ifMatch,
      q: query(["limit", "cursor", "version"])
    }).chain(({ c, ifMatch, method, q }) =>
      segment(playground[c]!).map((id): Wire => ({
        method,
        path: method === "POST" ? `/api/v1/${c}/${id}/revoke` : `/api/v1/${c}/${id}${q}`,
        headers: [...auth, ...precondition(ifMatch)]
      }))
    ),
    // lists
    fc.record({ c: collection, q: query(["limit", "cursor", "connectionId"]) }).map(({ c, q }): Wire => ({
      method: "GET",
      path: `/api/v1/${c}${q}`,
      headers: auth
    })),
    // the audit query
    query(["from", "to", "tool", "outcome", "identity", "connection", "limit", "cursor"]).map((q): Wire => ({
      method: "GET",
      path: `/api/v1/audit${q}`,
      headers: auth
    })),
    // OpenAPI import (a preview, or applied)
    fc.record({ body: byCollection["openapi/import"]!, dryRun: fc.boolean() }).map(({ body, dryRun }): Wire => ({
      method: "POST",
      path: `/api/v1/openapi/import${dryRun ? "?dryRun=true" : ""}`,
      headers: json,
      body: toJson(body)
    })),
    // the events stream with hostile topics and Last-Event-ID
    fc.record({ topics: hostileString, last: fc.option(hostileHeader, { nil: undefined }) }).map(
      ({ last, topics }): Wire => ({
        method: "GET",
        path: `/api/v1/events?topics=${percentEncode(topics)}`,
        headers: [...auth, ...(last === undefined ? [] : [["last-event-id", last] as const])],
        statusOnly: true
      })
    )
  )
}
