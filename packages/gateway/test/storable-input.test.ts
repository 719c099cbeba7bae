/**
 * Values a client sends that Postgres cannot store (U+0000, lone surrogates)
 * through the real HTTP surface, on PGlite and on real Postgres (issue 15,
 * item 1): the call is answered, its `calls` event and audit row are stored
 * (made storable: U+FFFD in place of each such character), every subscriber
 * of GET /api/v1/events keeps receiving later change signals and call
 * events, a 2025 `initialize` with such a `clientInfo` starts a session, the
 * `janus_event_log_buffered` gauge counts what waits for the database, and
 * closing the gateway (what SIGTERM does) logs no failed final flush.
 */
import { assert, describe, layer } from "@effect/vitest"
import { AdminTokens, AuditLog, Connections, EventLog } from "@janus/storage"
import * as StorageTesting from "@janus/storage/testing"
import { Effect, Fiber, Layer, Logger, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as SqlClient from "effect/sql/SqlClient"
import * as GatewayTesting from "../src/testing.ts"
import { initialize, post, stateful, stateless } from "./mcp/http-client.ts"
import { collect, type SseEvent } from "./support/EventStream.ts"

const postgres = await StorageTesting.requirePostgres()

const backends = [
  { name: "pglite", storage: () => StorageTesting.layerMemory(), run: true },
  { name: "postgres", storage: () => StorageTesting.layerPostgres(), run: postgres }
] as const

const baseUrl = HttpServer.addressFormattedWith((base) => Effect.succeed(base))

interface StreamEvent {
  readonly id: string | undefined
  readonly event: string | undefined
  readonly data: any
}

/** Reads GET /api/v1/events`query` as `token` (with `headers`) until `until` holds (or 15 s pass). */
const watch = (
  token: string,
  until: (events: ReadonlyArray<StreamEvent>) => boolean,
  query = "",
  headers: Record<string, string> = {}
) => {
  const parse = (raw: ReadonlyArray<SseEvent>): Array<StreamEvent> =>
    raw.filter((e) => e.event !== undefined).map((e) => ({
      id: e.id,
      event: e.event,
      data: e.data === undefined || e.data === "" ? null : JSON.parse(e.data)
    }))
  return Effect.map(
    collect(
      `/api/v1/events${query}`,
      { authorization: `Bearer ${token}`, ...headers },
      (raw) => until(parse(raw)),
      15_000
    ),
    (reply) => {
      assert.strictEqual(reply.status, 200, reply.body)
      return parse(reply.events)
    }
  )
}

const adminToken = Effect.gen(function*() {
  const created = yield* (yield* AdminTokens).create({ name: "studio" })
  return Redacted.value(created.plaintext)
})

/** `=?base64?...?=`, the Mcp-Name form of a name that is not plain ASCII. */
const base64Header = (name: string) => `=?base64?${Buffer.from(name, "utf8").toString("base64")}?=`

/** A 2026-07-28 tools/call (the Mcp-Name header mirrors the name, base64-encoded). */
const callTool = (name: string) =>
  Effect.flatMap(
    baseUrl,
    (base) => stateless(`${base}/mcp`, "tools/call", { name, arguments: {} }, { "mcp-name": base64Header(name) })
  )

/**
 * A tools/call in a 2025-11-25 session: a lone surrogate has no UTF-8 form, so
 * no Mcp-Name header can carry it; the 2025 revisions have none.
 */
const callToolInSession = (name: string) =>
  Effect.gen(function*() {
    const url = `${yield* baseUrl}/mcp`
    const session = yield* initialize(url)
    return yield* stateful(url, session, "tools/call", { name, arguments: {} })
  })

/** The gauge's value in GET /metrics. */
const bufferedGauge = Effect.flatMap(baseUrl, (base) =>
  Effect.promise(async () => {
    const text = await (await fetch(`${base}/metrics`)).text()
    const line = text.split("\n").find((l) => l.startsWith("janus_event_log_buffered"))
    return line === undefined ? undefined : Number(line.split(" ").at(-1))
  }))

const isCall = (tool: string) => (e: StreamEvent) => e.data?.topic === "calls" && e.data?.data?.tool === tool

for (const backend of backends) {
  describe.skipIf(!backend.run)(`unstorable client values: ${backend.name}`, () => {
    layer(GatewayTesting.layer({ storage: backend.storage() }), { timeout: 90_000, excludeTestServices: true })(
      (it) => {
        it.effect("a tools/call named x\\u0000 is answered, recorded, and the event stream keeps delivering", () =>
          Effect.gen(function*() {
            const token = yield* adminToken
            const watching = yield* Effect.forkChild(
              watch(
                token,
                (events) => events.some((e) => e.data?.topic === "connection") && events.some(isCall("after_nul"))
              )
            )
            yield* Effect.sleep("300 millis")

            const nul = yield* callTool("x\u0000")
            assert.strictEqual(nul.status, 200, nul.text)
            const lone = yield* callToolInSession("y\ud800")
            assert.strictEqual(lone.status, 200, lone.text)
            // a flush is not blocked by the records of those calls
            yield* (yield* EventLog).flush

            // later change signals and call events still arrive
            yield* (yield* Connections).create({ kind: "rest", name: "after-nul", baseUrl: "https://api.example.com" })
            assert.strictEqual((yield* callTool("after_nul")).status, 200)
            const events = yield* Fiber.join(watching)
            assert.isTrue(events.some((e) => e.data?.topic === "connection"), JSON.stringify(events))
            assert.isTrue(events.some(isCall("after_nul")), JSON.stringify(events))
            // the NUL call's own event was stored, with U+FFFD in place of U+0000
            assert.isTrue(events.some(isCall("x\ufffd")), JSON.stringify(events))

            // and so were its audit rows; the audit query finds them by the name the client sent
            yield* (yield* AuditLog).flush
            const base = yield* baseUrl
            for (const [tool, stored] of [["x\u0000", "x\ufffd"], ["y\ud800", "y\ufffd"]] as const) {
              const reply = yield* Effect.promise(() =>
                fetch(`${base}/api/v1/audit?tool=${encodeURIComponent(tool.replace("\ud800", "\ufffd"))}`, {
                  headers: { authorization: `Bearer ${token}` }
                }).then(async (r) => ({ status: r.status, body: await r.json() as any }))
              )
              assert.strictEqual(reply.status, 200, JSON.stringify(reply.body))
              assert.deepStrictEqual(reply.body.items.map((r: { tool: string }) => r.tool), [stored])
            }
          }))

        it.effect("an initialize whose clientInfo holds U+0000 and a lone surrogate starts a session (200)", () =>
          Effect.gen(function*() {
            const base = yield* baseUrl
            const reply = yield* post(`${base}/mcp`, {
              jsonrpc: "2.0",
              id: 1,
              method: "initialize",
              params: {
                protocolVersion: "2025-11-25",
                capabilities: { "x\u0000": { "\ud800": "\udc00" } },
                clientInfo: { name: "client\u0000", version: "1\ud800", "k\u0000": "v" }
              }
            })
            assert.strictEqual(reply.status, 200, reply.text)
            const session = reply.headers.get("mcp-session-id")
            assert.isString(session)
            const list = yield* post(
              `${base}/mcp`,
              { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} },
              { "mcp-session-id": session!, "mcp-protocol-version": "2025-11-25" }
            )
            assert.strictEqual(list.status, 200, list.text)
            assert.isArray(list.body.result.tools)
          }))

        it.effect("when the writer loses events every subscriber gets a resync, filtered or replaying across the gap", () =>
          Effect.gen(function*() {
            const token = yield* adminToken
            const sql = yield* SqlClient.SqlClient
            const log = yield* EventLog
            yield* log.append({ topic: "before-gap" })
            yield* log.flush
            const lastBefore = String(yield* log.latestId)
            const resynced = (events: ReadonlyArray<StreamEvent>) => events.some((e) => e.event === "resync")
            const all = yield* Effect.forkChild(watch(token, resynced))
            const tools = yield* Effect.forkChild(watch(token, resynced, "?topics=tools"))
            yield* Effect.sleep("300 millis")
            // Postgres refuses one event (a CHECK constraint stands in for any data error)
            yield* sql`ALTER TABLE broker_event ADD CONSTRAINT no_poison CHECK (topic <> 'poison') NOT VALID`
            yield* Effect.gen(function*() {
              yield* log.append({ topic: "poison" })
              yield* log.append({ topic: "calls", data: { tool: "survivor" } })
              yield* log.flush
            }).pipe(Effect.ensuring(Effect.orDie(sql`ALTER TABLE broker_event DROP CONSTRAINT no_poison`)))
            const live = yield* Fiber.join(all)
            assert.isTrue(resynced(live), JSON.stringify(live))
            assert.isTrue(live.some((e) => e.data?.data?.tool === "survivor"), "the others are delivered")
            assert.isFalse(live.some((e) => e.data?.topic === "janus.gap"), "the marker is not data")
            assert.isTrue(resynced(yield* Fiber.join(tools)), "a subscriber of other topics resyncs too")
            // reconnecting from before the gap: one resync instead of a replay with a hole in it
            const replay = yield* watch(token, (events) => events.length > 0, "?topics=calls", {
              "last-event-id": lastBefore
            })
            assert.strictEqual(replay[0]?.event, "resync", JSON.stringify(replay))
          }))

        it.effect("janus_event_log_buffered counts the events waiting for the database, and 0 once written", () =>
          Effect.gen(function*() {
            const sql = yield* SqlClient.SqlClient
            const log = yield* EventLog
            yield* log.flush
            assert.strictEqual(yield* bufferedGauge, 0)
            yield* sql`ALTER TABLE broker_event RENAME TO broker_event_away`
            const restore = sql`ALTER TABLE broker_event_away RENAME TO broker_event`
            yield* Effect.gen(function*() {
              for (let i = 0; i < 7; i++) yield* log.append({ topic: "gauge-test", data: { i } })
              assert.strictEqual(yield* bufferedGauge, 7, "appended, not yet flushed")
              // the flush fails: the 7 still wait, and the gauge says so
              const failed = yield* Effect.result(log.flush)
              assert.strictEqual(failed._tag, "Failure")
              assert.strictEqual(yield* bufferedGauge, 7, "kept for the next flush")
            }).pipe(Effect.ensuring(Effect.orDie(restore)))
            yield* log.flush
            assert.strictEqual(yield* bufferedGauge, 0)
          }))
      }
    )

    layer(Layer.empty, { timeout: 90_000, excludeTestServices: true })((it) => {
      it.effect("closing the gateway (what SIGTERM does) after such calls logs no failed flush", () =>
        Effect.gen(function*() {
          const lines: Array<string> = []
          const capture = Logger.layer([
            Logger.make(({ cause, logLevel, message }) => {
              const parts = Array.isArray(message) ? message : [message]
              lines.push(`${logLevel} ${parts.map(String).join(" ")} ${cause.reasons.length > 0 ? "(cause)" : ""}`)
            })
          ])
          // the gateway's scope closes when this effect ends: the drain and the final flushes run
          yield* Effect.gen(function*() {
            assert.strictEqual((yield* callTool("x\u0000")).status, 200)
            assert.strictEqual((yield* callToolInSession("z\udfff")).status, 200)
          }).pipe(Effect.provide(GatewayTesting.layer({ storage: backend.storage() })), Effect.provide(capture))
          assert.isTrue(lines.some((l) => l.includes("drain complete")), lines.join("\n"))
          const failures = lines.filter((l) => /flush failed|flushing .* failed|lost/i.test(l))
          assert.deepStrictEqual(failures, [], lines.join("\n"))
        }))
    })
  })
}
