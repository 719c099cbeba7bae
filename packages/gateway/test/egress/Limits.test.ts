import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { call, egress, httpServer, trustLoopback } from "./servers.ts"

// Answers with `size` bytes, declaring the length or streaming chunked.
const sizedServer = (size: number, declare: boolean) =>
  httpServer((_req, res) => {
    const body = Buffer.alloc(size, 97)
    res.writeHead(200, declare ? { "content-length": String(size) } : {})
    if (declare) return res.end(body)
    const chunk = 64 * 1024
    for (let offset = 0; offset < size; offset += chunk) res.write(body.subarray(offset, offset + chunk))
    res.end()
  })

describe("response size limit", () => {
  for (const declare of [true, false]) {
    const how = declare ? "with Content-Length" : "chunked"
    it.live(`refuses a body over the connection's limit (${how})`, () =>
      Effect.gen(function*() {
        const server = yield* sizedServer(300_000, declare)
        const error = yield* Effect.flip(
          call({ id: "big", baseUrl: server.origin, allow: trustLoopback, maxResponseBytes: 100_000 }, {
            method: "GET",
            path: "/"
          })
        )
        assert.strictEqual(error._tag, "ResponseTooLarge")
        if (error._tag === "ResponseTooLarge") assert.strictEqual(error.limitBytes, 100_000)
        assert.strictEqual(server.received.length, 1, "not retried")
      }).pipe(Effect.provide(egress())))

    it.live(`reads a body within the limit (${how})`, () =>
      Effect.gen(function*() {
        const server = yield* sizedServer(200_000, declare)
        const response = yield* call({
          id: "ok",
          baseUrl: server.origin,
          allow: trustLoopback,
          maxResponseBytes: 200_000
        }, { method: "GET", path: "/" })
        assert.strictEqual(response.body.length, 200_000)
        assert.isTrue(response.body.every((b) => b === 97))
      }).pipe(Effect.provide(egress())))
  }

  it.live("the default limit is 10 MiB", () =>
    Effect.gen(function*() {
      const server = yield* sizedServer(10 * 1024 * 1024 + 1, false)
      const error = yield* Effect.flip(call({ id: "huge", baseUrl: server.origin, allow: trustLoopback }, {
        method: "GET",
        path: "/"
      }))
      assert.strictEqual(error._tag, "ResponseTooLarge")
      if (error._tag === "ResponseTooLarge") assert.strictEqual(error.limitBytes, 10 * 1024 * 1024)
    }).pipe(Effect.provide(egress())))

  it.live("HEAD answers carry no body whatever their Content-Length", () =>
    Effect.gen(function*() {
      const server = yield* sizedServer(300_000, true)
      const response = yield* call({
        id: "head",
        baseUrl: server.origin,
        allow: trustLoopback,
        maxResponseBytes: 10
      }, { method: "HEAD", path: "/" })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.body.length, 0)
    }).pipe(Effect.provide(egress())))
})
