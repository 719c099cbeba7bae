/**
 * The HTTP middleware on a small router: request ids, trace context in and
 * out, span names, and the drain gate in process (readiness, refusals,
 * streams, waiting, flush hooks, the timeout).
 */
import { NodeHttpServer } from "@effect/platform-node"
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Fiber, Layer, Schedule, Stream, Tracer } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { createServer } from "node:http"
import { Drain, HttpObservability, Logging, TraceContext } from "../../src/observability/index.ts"

const captured = { lines: [] as Array<string>, spans: [] as Array<Tracer.NativeSpan> }

const recordingTracer = Tracer.make({
  span: (options) => {
    const span = new Tracer.NativeSpan(options)
    captured.spans.push(span)
    return span
  }
})

const Routes = HttpRouter.use(Effect.fn(function*(router) {
  yield* router.add(
    "GET",
    "/work",
    Effect.gen(function*() {
      yield* Effect.logInfo("handled work")
      return HttpServerResponse.jsonUnsafe(yield* TraceContext.inject({ accept: "application/json" }))
    })
  )
  yield* router.add("GET", "/items/:id", Effect.succeed(HttpServerResponse.text("item")))
  yield* router.add("GET", "/healthz", Effect.succeed(HttpServerResponse.text("ok")))
  yield* router.add("GET", "/readyz", Effect.succeed(HttpServerResponse.jsonUnsafe({ status: "ready" })))
  yield* router.add("GET", "/slow", Effect.sleep("400 millis").pipe(Effect.as(HttpServerResponse.text("slow done"))))
  yield* router.add(
    "GET",
    "/events",
    Effect.succeed(HttpServerResponse.stream(
      Stream.fromSchedule(Schedule.spaced("50 millis")).pipe(
        Stream.map((n) => `data: ${n}\n\n`),
        Stream.encodeText
      ),
      { contentType: "text/event-stream" }
    ))
  )
}))

const server = (drain: Layer.Layer<Drain.Drain>) =>
  HttpRouter.serve(Layer.mergeAll(Routes, HttpObservability.layer()), { disableListenLog: true, disableLogger: true })
    .pipe(
      Layer.provideMerge(drain),
      Layer.provideMerge(HttpObservability.layerTracing({ templates: ["/work", "/items/:id", "/slow", "/events"] })),
      Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
      Layer.provideMerge(Logging.layer({ level: "info", write: (line) => captured.lines.push(line) })),
      Layer.provideMerge(Layer.succeed(Tracer.Tracer, recordingTracer))
    )

const baseUrl = HttpServer.addressFormattedWith((url) => Effect.succeed(url))
const get = (path: string, headers: Record<string, string> = {}) =>
  Effect.flatMap(baseUrl, (url) => Effect.promise(() => fetch(`${url}${path}`, { headers })))

const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
const parentId = "00f067aa0ba902b7"

describe("HttpObservability", () => {
  layer(server(Drain.Drain.layer({ timeout: "2 seconds" })), { excludeTestServices: true })("middleware", (it) => {
    it.effect("echoes a sane X-Request-Id, puts it on the request's log lines, and continues the trace", () =>
      Effect.gen(function*() {
        const response = yield* get("/work", {
          "x-request-id": "req-abc.1",
          traceparent: `00-${traceId}-${parentId}-01`,
          tracestate: "vendor=opaque"
        })
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.headers.get("x-request-id"), "req-abc.1")
        const outgoing: any = yield* Effect.promise(() => response.json())
        // The current span (the server span) continues the incoming trace; tracestate is passed on.
        assert.match(outgoing.traceparent, new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`))
        assert.strictEqual(outgoing.tracestate, "vendor=opaque")
        const line = captured.lines.map((l) => JSON.parse(l)).find((r) => r.message === "handled work")
        assert.strictEqual(line.request_id, "req-abc.1")
        assert.strictEqual(line.trace_id, traceId)
        const serverSpan = captured.spans.find((s) => s.name === "GET /work")!
        assert.isDefined(serverSpan)
        assert.strictEqual(serverSpan.kind, "server")
        assert.strictEqual(serverSpan.attributes.get("http.route"), "/work")
      }))

    it.effect("makes up a request id for an insane one; names spans by route; does not trace probes", () =>
      Effect.gen(function*() {
        const response = yield* get("/items/42", { "x-request-id": "bad id with spaces" })
        assert.match(response.headers.get("x-request-id") ?? "", /^[0-9a-f-]{36}$/)
        assert.isDefined(captured.spans.find((s) => s.name === "GET /items/:id"))
        const before = captured.spans.length
        yield* get("/healthz")
        yield* get("/readyz")
        assert.strictEqual(captured.spans.length, before)
        // a foreign tracestate is never sent on a trace it did not come with
        const fresh = yield* get("/work", { tracestate: "vendor=opaque" })
        assert.isUndefined(((yield* Effect.promise(() => fresh.json())) as any).tracestate)
      }))
  })

  layer(server(Drain.Drain.layer({ timeout: "3 seconds" })), { excludeTestServices: true })(
    "drain in process",
    (it) => {
      it.effect("readiness 503 at once, new requests refused, streams end with retry:, in-flight finish, hooks run", () =>
        Effect.gen(function*() {
          const drain = yield* Drain.Drain
          const url = yield* baseUrl
          const flushed: Array<string> = []
          yield* drain.addFlushHook("first", Effect.sync(() => flushed.push("first")))
          yield* drain.addFlushHook("broken", Effect.fail("disk full"))
          yield* drain.addFlushHook("last", Effect.sync(() => flushed.push("last")))

          const stream = yield* Effect.promise(() => fetch(`${url}/events`))
          const body = Effect.runPromise(Effect.promise(() => stream.text()))
          const slow = Effect.runPromise(Effect.promise(() => fetch(`${url}/slow`).then((r) => r.text())))
          yield* Effect.sleep("100 millis")
          assert.strictEqual(drain.inFlight(), 1, "the slow request is in flight, the stream is not counted")

          const run = yield* Effect.forkChild(drain.run)
          yield* Effect.sleep("20 millis")
          const ready = yield* get("/readyz")
          assert.strictEqual(ready.status, 503)
          const refused = yield* get("/items/1")
          assert.strictEqual(refused.status, 503)
          assert.strictEqual(refused.headers.get("retry-after"), "1")
          assert.strictEqual(refused.headers.get("connection"), "close")
          assert.deepInclude(((yield* Effect.promise(() => refused.json())) as any).error, { code: "draining" })
          assert.strictEqual((yield* get("/healthz")).status, 200)

          assert.match(
            yield* Effect.promise(() => body),
            /^(data: \d+\n\n)*: janus is shutting down; reconnect\nretry: 1000\n\n$/
          )
          assert.strictEqual(yield* Effect.promise(() => slow), "slow done")
          const report = yield* Fiber.join(run)
          assert.strictEqual(report.unfinished, 0)
          assert.isAtLeast(report.waitedMillis, 200)
          assert.deepStrictEqual(report.flushed.map((f) => [f.name, f.ok]), [["first", true], ["broken", false], [
            "last",
            true
          ]])
          assert.deepStrictEqual(flushed, ["first", "last"])
          // a second run awaits the first
          assert.deepStrictEqual(yield* drain.run, report)
        }))
    }
  )

  it.live("a drain stops waiting at its timeout and reports what is unfinished", () =>
    Effect.gen(function*() {
      const drain = yield* Drain.Drain
      yield* Effect.forkChild(drain.track(Effect.sleep("10 seconds")))
      yield* Effect.yieldNow
      const report = yield* drain.run
      assert.strictEqual(report.unfinished, 1)
      assert.isAtLeast(report.waitedMillis, 150)
    }).pipe(Effect.provide(Drain.Drain.layer({ timeout: "200 millis" }))), { timeout: 10_000 })
})
