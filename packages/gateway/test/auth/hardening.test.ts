/**
 * Hardening helpers: the JSON depth limit, the Node server limits on a real
 * loopback server (oversized headers, slow headers), and error bodies
 * without internals.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Logger } from "effect"
import { HttpRouter } from "effect/http"
import * as Net from "node:net"
import * as Hardening from "../../src/http/Hardening.ts"

const nested = (depth: number, inner = "1") => "[".repeat(depth) + inner + "]".repeat(depth)

/** Starts `Hardening.createServer(limits)` on loopback for the scope; answers 200 "ok" once the body is read. */
const server = (limits: Partial<Hardening.ServerLimits>) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ port: number; close: () => Promise<void> }>((resolve) => {
        const http = Hardening.createServer(limits)
        http.on("request", (req, res) => {
          req.resume()
          req.on("end", () => res.end("ok"))
        })
        http.listen(0, "127.0.0.1", () =>
          resolve({
            port: (http.address() as Net.AddressInfo).port,
            close: () =>
              new Promise<void>((done) => {
                http.closeAllConnections()
                http.close(() => done())
              })
          }))
      })
    ),
    (s) => Effect.promise(s.close)
  )

/** Writes `chunks` on a raw socket (waiting `pauseMs` after the first) and returns what came back and when. */
const raw = (port: number, chunks: ReadonlyArray<string>, pauseMs = 0) =>
  Effect.promise(() =>
    new Promise<{ text: string; ms: number }>((resolve) => {
      const started = Date.now()
      const socket = Net.connect({ port, host: "127.0.0.1" })
      let text = ""
      socket.on("data", (data) => {
        text += data.toString()
      })
      socket.on("error", () => undefined)
      socket.on("close", () => resolve({ text, ms: Date.now() - started }))
      socket.on("connect", () => {
        socket.write(chunks[0]!)
        setTimeout(() => {
          for (const chunk of chunks.slice(1)) if (!socket.destroyed) socket.write(chunk)
        }, pauseMs)
      })
      setTimeout(() => socket.destroy(), 5_000)
    })
  )

/** The JSON body of a raw HTTP response. */
const body = (text: string): { readonly error: string; readonly message: string } => {
  const at = text.indexOf("\r\n\r\n")
  assert.isAbove(at, 0, `a complete response head: ${JSON.stringify(text)}`)
  return JSON.parse(text.slice(at + 4))
}

describe("Hardening", () => {
  it.effect("JSON depth: 64 levels pass, 65 are refused; brackets inside strings do not count", () =>
    Effect.sync(() => {
      assert.isFalse(Hardening.exceedsDepth(nested(64)))
      assert.isTrue(Hardening.exceedsDepth(nested(65)))
      assert.isFalse(Hardening.exceedsDepth(JSON.stringify({ a: "[[[[[[[[{{{{{{{{".repeat(20) })))
      assert.isFalse(Hardening.exceedsDepth(JSON.stringify({ a: "\\\"[[[[" + "[".repeat(100) }), 2))
      assert.isTrue(Hardening.exceedsDepth(`{"a":{"b":[{"c":1}]}}`, 3))
      assert.isFalse(Hardening.exceedsDepth(`{"a":{"b":[{"c":1}]}}`, 4))
      assert.isFalse(Hardening.exceedsDepth(`[${"[1],".repeat(10_000)}[1]]`))
      assert.strictEqual(
        Hardening.tooDeepMessage(),
        "The request body nests arrays and objects more than 64 levels deep; send a flatter message"
      )
      // a 1 MiB body of shallow nesting is accepted (its cost belongs in a benchmark, not here)
      const big = JSON.stringify({ items: Array.from({ length: 40_000 }, (_, i) => ({ id: i, tags: ["a", "b"] })) })
      assert.isFalse(Hardening.exceedsDepth(big))
    }))

  it.effect("Node server: headers beyond maxHeaderSize get 431 before any handler runs", () =>
    Effect.gen(function*() {
      const { port } = yield* server({ maxHeaderSize: 1024 })
      const ok = yield* raw(port, ["GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"])
      assert.match(ok.text, /^HTTP\/1.1 200/)
      const big = yield* raw(port, [`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(4_096)}\r\n\r\n`])
      assert.match(big.text, /^HTTP\/1.1 431/)
      const tooBig = body(big.text)
      assert.strictEqual(tooBig.error, "request_header_fields_too_large")
      assert.include(tooBig.message, "more than 1024 bytes")
      // not HTTP at all: 400 saying so, with a body
      const garbage = yield* raw(port, ["\u0000\u0001 nonsense\r\n\r\n"])
      assert.match(garbage.text, /^HTTP\/1.1 400/)
      assert.strictEqual(body(garbage.text).error, "bad_request")
      assert.include(body(garbage.text).message, "not a valid HTTP/1.1 request")
    }))

  it.effect("Node server: a client that sends its headers too slowly gets 408 and is disconnected", () =>
    Effect.gen(function*() {
      const { port } = yield* server({ headersTimeout: 300, requestTimeout: 600, connectionsCheckingInterval: 50 })
      const slow = yield* raw(port, ["GET / HTTP/1.1\r\nHost: x\r\n", "X-Late: 1\r\n\r\n"], 2_000)
      assert.match(slow.text, /^HTTP\/1.1 408/)
      assert.isBelow(slow.ms, 1_500)
      // the 408 says which limit the request missed and what to do
      assert.match(slow.text, /\r\ncontent-type: application\/json\r\n/i)
      const timedOut = body(slow.text)
      assert.strictEqual(timedOut.error, "request_timeout")
      assert.include(timedOut.message, "headers within 300 ms")
      assert.include(timedOut.message, "whole request within 600 ms")
      // a body that stalls gets the same answer
      const stalled = yield* raw(
        port,
        ["POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc", "defghij"],
        2_000
      )
      assert.match(stalled.text, /^HTTP\/1.1 408/)
      assert.strictEqual(body(stalled.text).error, "request_timeout")
    }))

  it.effect("default server limits", () =>
    Effect.sync(() => {
      const options = Hardening.serverOptions()
      assert.deepStrictEqual(options, {
        headersTimeout: 10_000,
        requestTimeout: 30_000,
        maxHeaderSize: 16_384,
        connectionsCheckingInterval: 1_000,
        keepAliveTimeout: 5_000
      })
      const http = Hardening.createServer()
      assert.strictEqual(http.maxHeadersCount, 100)
      assert.strictEqual(http.headersTimeout, 10_000)
      assert.strictEqual(http.requestTimeout, 30_000)
    }))

  it.effect("publicError: a fixed sentence and an id for the client; the cause only in the server log", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const logger = Logger.layer([
        Logger.make(({ message }) => {
          lines.push(Array.isArray(message) ? message.map(String).join(" ") : String(message))
        })
      ])
      const body = yield* Hardening.publicError(new Error("password=hunter2 at db.internal:5432")).pipe(
        Effect.provide(logger)
      )
      const visible = JSON.stringify(body)
      assert.notInclude(visible, "hunter2")
      assert.notMatch(visible, /\n\s+at /)
      assert.strictEqual(body.message, "The gateway failed to handle this request")
      // The operator finds the cause under the id the client quotes.
      assert.isTrue(lines.some((line) => line.includes(body.errorId) && line.includes("hunter2")), lines.join("\n"))
    }))

  it.effect("a handler that dies answers 500 without its message or stack", () =>
    Effect.gen(function*() {
      const app = HttpRouter.add("GET", "/boom", Effect.die(new Error("internal detail: pool exhausted")))
      const { dispose, handler } = HttpRouter.toWebHandler(app.pipe(Layer.provide(Logger.layer([]))), {
        disableLogger: true
      })
      const response = yield* Effect.promise(() => handler(new Request("http://127.0.0.1/boom")))
      const text = yield* Effect.promise(() => response.text())
      yield* Effect.promise(dispose)
      assert.strictEqual(response.status, 500)
      assert.notInclude(text, "internal detail")
      assert.notMatch(text, /\n\s+at /)
    }))
})
