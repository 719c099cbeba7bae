/**
 * The gateway's server (`Gateway.layerServer`) answers requests it accepts
 * while the rest of the gateway still builds: the layers after the server are
 * held on a gate, so the server listens but the router is not installed yet.
 * `/readyz` must get 503 with a retry hint (not wait forever), `/healthz` 200,
 * and once the gate opens the router answers `/readyz` with 200.
 */
import { assert, describe, it } from "@effect/vitest"
import * as StorageTesting from "@janus/storage/testing"
import { Context, Deferred, Effect, Fiber, Layer } from "effect"
import { HttpServer } from "effect/http"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { JanusConfig } from "../src/config/JanusConfig.ts"
import * as Gateway from "../src/Gateway.ts"
import * as Startup from "../src/http/Startup.ts"

interface Answer {
  readonly status: number
  readonly retryAfter: string | null
  readonly body: unknown
}

/** GET `url`; a request left unanswered fails the test after 10 s instead of hanging it. */
const get = (url: string) =>
  Effect.promise((signal) =>
    fetch(url, { signal }).then(async (r): Promise<Answer> => ({
      status: r.status,
      retryAfter: r.headers.get("retry-after"),
      body: await r.json()
    }))
  ).pipe(
    Effect.timeoutOrElse({
      duration: "10 seconds",
      orElse: () => Effect.die(new Error(`${url} was accepted but never answered`))
    })
  )

describe("Gateway.layerServer while the gateway starts", () => {
  it.live("answers /readyz 503 and /healthz 200 before the router is installed, then /readyz 200", () =>
    Effect.gen(function*() {
      const address = yield* Deferred.make<string>()
      const gate = yield* Deferred.make<void>()
      const gateway = Gateway.layerOn({
        // the server's address as soon as it listens
        server: Gateway.layerServer.pipe(
          Layer.tap((context) =>
            Deferred.succeed(address, HttpServer.formatAddress(Context.get(context, HttpServer.HttpServer).address))
          )
        ),
        storage: StorageTesting.layerMemory(),
        // built after the server and before the router: holds the start here
        extra: Layer.effectDiscard(Deferred.await(gate))
      }).pipe(
        Layer.provide(JanusConfig.layerWith({ JANUS_HOST: "127.0.0.1", JANUS_PORT: 0, JANUS_ALLOW_ANONYMOUS: true }))
      )
      const started = yield* Effect.forkChild(Layer.build(gateway))
      const url = yield* Deferred.await(address)

      const early = yield* get(`${url}/readyz`)
      assert.strictEqual(early.status, 503)
      assert.strictEqual(early.retryAfter, "1")
      assert.deepInclude(early.body, { status: "starting" })
      assert.strictEqual((yield* get(`${url}/mcp`)).status, 503)
      assert.deepStrictEqual(yield* get(`${url}/healthz`), { status: 200, retryAfter: null, body: { status: "ok" } })

      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(started)
      const ready = yield* get(`${url}/readyz`)
      assert.strictEqual(ready.status, 200)
      assert.deepStrictEqual(ready.body, { status: "ready" })
    }))
})

describe("Startup.answerUntilServed after shutdown", () => {
  it.live("says the gateway is stopping once the router's listener was installed and removed", () =>
    Effect.gen(function*() {
      const server = Startup.answerUntilServed(Http.createServer())
      yield* Effect.acquireRelease(
        Effect.callback<void>((resume) => {
          server.listen(0, "127.0.0.1", () => resume(Effect.void))
        }),
        () =>
          Effect.callback<void>((resume) => {
            server.close(() => resume(Effect.void))
          })
      )
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      assert.deepInclude((yield* get(`${url}/readyz`)).body, { status: "starting" })
      const router = (_: Http.IncomingMessage, response: Http.ServerResponse) => {
        response.end(JSON.stringify({ status: "ready" }))
      }
      server.on("request", router)
      assert.deepStrictEqual((yield* get(`${url}/readyz`)).body, { status: "ready" })
      server.off("request", router)
      const stopping = yield* get(`${url}/readyz`)
      assert.strictEqual(stopping.status, 503)
      assert.strictEqual(stopping.retryAfter, "1")
      assert.deepInclude(stopping.body, { status: "stopping" })
      assert.strictEqual((yield* get(`${url}/healthz`)).status, 200)
    }).pipe(Effect.scoped))
})
