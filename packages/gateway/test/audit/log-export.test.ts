/**
 * Audit rows as OTLP log records (`audit/LogExport`): with OTLP logs on, a
 * gateway's audit rows arrive at a collector on 127.0.0.1 (OTLP/HTTP JSON)
 * as `audit record` log records with `audit.kind`, `audit.identity` and
 * `audit.outcome` attributes (an admin change, a refused admin
 * authentication and a tools/call), and no credential used in the test is in what
 * was exported; with OTLP logs off, recording a row logs nothing.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { AdminTokens, type AuditInput, AuditLog } from "@janus/storage"
import { Effect, Layer, Logger, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { OtlpExporter } from "effect/observability"
import * as LogExport from "../../src/audit/LogExport.ts"
import { JanusConfig } from "../../src/config/JanusConfig.ts"
import { Endpoint } from "../../src/config/OtelVariables.ts"
import { Otlp } from "../../src/observability/index.ts"
import { call, client, expectStatus, layer as adminLayer, suiteOptions } from "../admin/support.ts"
import { stateless } from "../mcp/http-client.ts"
import * as Receiver from "../observability/support/Receiver.ts"

/** Logs only, to the receiver, exported every 100 ms. */
const settingsFor = (receiver: Receiver.ReceiverState): Otlp.OtlpSettings => ({
  serviceName: "janus-test",
  serviceVersion: "0.1.0",
  attributes: { "service.instance.id": "test-instance" },
  traces: undefined,
  metrics: undefined,
  logs: {
    protocol: "http/json",
    url: `${receiver.url}/v1/logs`,
    headers: {},
    timeoutMillis: 5_000,
    compression: "none"
  },
  sampler: { name: "parentbased_always_on", ratio: 1 },
  metricsExportInterval: "100 millis",
  tracesExportInterval: "100 millis",
  logsExportInterval: "100 millis"
})

/** The admin gateway with OTLP logs on (its configuration says so), exporting to the receiver. */
const TestLayer = Layer.unwrap(Effect.map(Effect.service(Receiver.Receiver), (receiver) =>
  adminLayer(undefined, {
    OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: Option.some(new Endpoint(new URL(`${receiver.url}/v1/logs`))),
    OTEL_EXPORTER_OTLP_LOGS_PROTOCOL: Option.some("http/json")
  }).pipe(Layer.provideMerge(Otlp.layerWith(settingsFor(receiver)))))).pipe(Layer.provideMerge(Receiver.layer))

interface Exported {
  readonly body: unknown
  readonly attributes: Record<string, unknown>
}

/** Every log record received so far. */
const records = (state: Receiver.ReceiverState): Array<Exported> =>
  state.logs.flatMap((l) =>
    (l.resourceLogs ?? []).flatMap((rl: any) =>
      (rl.scopeLogs ?? []).flatMap((sl: any) =>
        (sl.logRecords ?? []).map((r: any): Exported => ({
          body: r.body?.stringValue ?? r.body,
          attributes: Receiver.attributes(r.attributes ?? [])
        }))
      )
    )
  )

/** The `audit record` log records received once `found` holds, flushing every 100 ms (5 s at most). */
const auditRecords = (found: (records: ReadonlyArray<Exported>) => boolean) =>
  Effect.gen(function*() {
    const receiver = yield* Receiver.Receiver
    const flusher = yield* OtlpExporter.Flusher
    let audit: Array<Exported> = []
    for (let i = 0; i < 50; i++) {
      yield* (yield* AuditLog).flush
      yield* flusher.flush
      audit = records(receiver).filter((r) => r.body === "audit record")
      if (found(audit)) break
      yield* Effect.sleep("100 millis")
    }
    return audit
  })

layer(Layer.mergeAll(TestLayer), suiteOptions)("audit rows as OTLP log records", (it) => {
  it.effect("an admin change, a refused admin authentication and a call arrive as audit records, no credential", () =>
    Effect.gen(function*() {
      const created = yield* (yield* AdminTokens).create({ name: "ops-otlp" })
      const adminValue = Redacted.value(created.plaintext)
      const made = expectStatus(yield* client(adminValue).post("/api/v1/client-tokens", { name: "otlp-agent" }), 201)
      const bogus = "jna_" + "z".repeat(40)
      expectStatus(yield* call("GET", "/api/v1/connections", { token: bogus }), 401)

      // a tools/call (of a tool that does not exist, as the anonymous caller) is a call row
      const url = yield* HttpServer.addressFormattedWith((base) => Effect.succeed(new URL("/mcp", base).href))
      const called = yield* stateless(url, "tools/call", { name: "no_such_tool", arguments: {} })
      assert.strictEqual(called.status, 200)

      const requestId = made.headers["x-request-id"]
      const audit = yield* auditRecords((all) =>
        all.some((r) => r.attributes["audit.requestId"] === requestId) &&
        all.some((r) => r.attributes["audit.kind"] === "auth") &&
        all.some((r) => r.attributes["audit.kind"] === "call")
      )
      const change = audit.filter((r) => r.attributes["audit.requestId"] === requestId)
      assert.lengthOf(change, 1, "one log record for the one row")
      assert.deepInclude(change[0]!.attributes, {
        "audit.kind": "admin",
        "audit.identity": `admin:${created.token.id}`,
        "audit.outcome": "ok",
        "audit.callerName": "ops-otlp",
        "audit.action": "create",
        "audit.resourceKind": "client_token",
        "audit.resourceName": "otlp-agent",
        "audit.interface": "api"
      })
      const refused = audit.find((r) => r.attributes["audit.kind"] === "auth")
      assert.isDefined(refused)
      assert.strictEqual(refused!.attributes["audit.outcome"], "unauthenticated")
      assert.isString(refused!.attributes["audit.identity"])

      const callRecord = audit.find((r) => r.attributes["audit.kind"] === "call")
      assert.isDefined(callRecord, "the tools/call's row was exported")
      assert.deepInclude(callRecord!.attributes, { "audit.identity": "anonymous", "audit.tool": "no_such_tool" })
      assert.isString(callRecord!.attributes["audit.outcome"])

      const receiver = yield* Receiver.Receiver
      const exported = JSON.stringify(receiver.logs)
      for (const credential of [adminValue, made.body.token as string, bogus]) {
        assert.notInclude(exported, credential, "a credential was exported")
      }
    }))
})

describe("audit rows as log lines, OTLP logs on or off", () => {
  const input: AuditInput = { kind: "admin", identity: "cli:ops", outcome: "ok", action: "rotate" }

  /** The log messages written while `LogExport` over a stand-in audit log records `input`, and the rows recorded. */
  const logged = (config: Parameters<typeof JanusConfig.layerWith>[0]) =>
    Effect.gen(function*() {
      const messages: Array<string> = []
      const rows: Array<AuditInput> = []
      const inner = { record: (row: AuditInput) => Effect.sync(() => rows.push(row)) } as unknown as AuditLog["Service"]
      const log = yield* Effect.service(AuditLog).pipe(
        Effect.provide(LogExport.layer.pipe(
          Layer.provide(Layer.succeed(AuditLog)(inner)),
          Layer.provide(JanusConfig.layerWith(config))
        ))
      )
      yield* log.record(input).pipe(
        Effect.provide(Logger.layer([Logger.make((o) => messages.push(JSON.stringify(o.message)))]))
      )
      return { messages, rows }
    })

  it.effect("on: one `audit record` line per row; off: the row only, nothing logged", () =>
    Effect.gen(function*() {
      const on = yield* logged({
        OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: Option.some(new Endpoint(new URL("http://127.0.0.1:4318/v1/logs")))
      })
      assert.deepStrictEqual(on.rows, [input])
      assert.deepStrictEqual(on.messages, [JSON.stringify(["audit record"])])
      const off = yield* logged({})
      assert.deepStrictEqual(off.rows, [input])
      assert.deepStrictEqual(off.messages, [])
      // OTLP configured but logs not exported: nothing either
      const logsNone = yield* logged({
        OTEL_EXPORTER_OTLP_ENDPOINT: Option.some(new Endpoint(new URL("http://127.0.0.1:4318"))),
        OTEL_LOGS_EXPORTER: "none"
      })
      assert.deepStrictEqual(logsNone.messages, [])
    }))
})
