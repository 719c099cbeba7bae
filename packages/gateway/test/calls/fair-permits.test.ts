/**
 * The concurrency permits of tools/call: the default cap of 200, and the
 * share of it one identity may hold, so one caller behind a slow downstream
 * cannot shed another.
 */
import { assert, describe, layer } from "@effect/vitest"
import { ClientTokens } from "@janus/storage"
import { Effect, Metric, Redacted } from "effect"
import * as Metrics from "../../src/observability/Metrics.ts"
import * as Downstream from "../support/Downstream.ts"
import { gateway } from "../support/PetsGateway.ts"
import { mcpUrl } from "../support/SdkClients.ts"
import { META, post } from "../support/StatelessRequests.ts"

/** A tools/call of `slow` that the downstream holds for `ms`; `signal` gives up on it. */
const slowCall = (url: string, ms: number, options: { token?: string; signal?: AbortSignal } = {}) =>
  fetch(url, {
    method: "POST",
    headers: {
      ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": "slow"
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: {
        name: "slow",
        arguments: { ms },
        _meta: META
      }
    }),
    ...(options.signal === undefined ? {} : { signal: options.signal })
  }).then((response) => response.text(), () => "aborted")

/** Calls holding a permit now (the `janus.calls.active` gauge). */
const active = Effect.map(
  Metric.snapshot,
  (all) =>
    all.filter((m) => m.id === Metrics.callsActive.id).reduce((sum, m) => sum + Number((m.state as any).value), 0)
)

const waitForActive = (n: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < 1_500 && (yield* active) < n; i++) yield* Effect.sleep("20 millis")
    assert.strictEqual(yield* active, n, `${n} calls hold a permit`)
  })

const reasonOf = (answer: { readonly body: any }): string | undefined => answer.body?.error?.data?.reason

describe("the default concurrency cap", () => {
  layer(gateway({}), { timeout: 120_000, excludeTestServices: true })("", (it) => {
    it.effect("is 200: with the default configuration the 201st concurrent call is shed", () =>
      Effect.gen(function*() {
        const url = (yield* mcpUrl).href
        const abort = new AbortController()
        // anonymous callers: the per-identity share does not apply, only the cap
        const held = Array.from({ length: 200 }, () => slowCall(url, 60_000, { signal: abort.signal }))
        yield* waitForActive(200)
        // a shed call is answered at once; an admitted one waits behind the held calls for a downstream socket
        const excess = yield* Effect.promise(() =>
          post(url, "tools/call", { name: "slow", arguments: { ms: 1 } }, { timeoutMs: 15_000 }).catch(() => ({
            body: "no answer within 15 s: the 201st call was admitted"
          }))
        )
        assert.strictEqual(reasonOf(excess), "shed", JSON.stringify(excess.body))
        assert.include(excess.body.error.message + JSON.stringify(excess.body.error.data), "200")
        abort.abort()
        yield* Effect.promise(() => Promise.all(held))
        for (let i = 0; i < 500 && (yield* active) > 0; i++) yield* Effect.sleep("20 millis")
        // the permits are back: a call is admitted again
        const after = yield* Effect.promise(() => post(url, "tools/call", { name: "slow", arguments: { ms: 1 } }))
        assert.deepStrictEqual(after.body.result?.structuredContent, { slow: true })
      }), 120_000)
  })
})

describe("the share of one identity", () => {
  layer(gateway({ MCP_MAX_CONCURRENT_CALLS: 4 }), { timeout: 60_000, excludeTestServices: true })("", (it) => {
    it.effect(
      "one token holds at most half the cap (2 of 4): another token's call is still admitted",
      () =>
        Effect.gen(function*() {
          const url = (yield* mcpUrl).href
          const downstream = yield* Downstream.Downstream
          const tokens = yield* ClientTokens
          const hog = Redacted.value((yield* tokens.create({ name: "hog" })).plaintext)
          const victim = Redacted.value((yield* tokens.create({ name: "victim" })).plaintext)
          const before = downstream.hits.get("GET /slow") ?? 0
          const abort = new AbortController()
          const held = Array.from({ length: 2 }, () => slowCall(url, 60_000, { token: hog, signal: abort.signal }))
          yield* waitForActive(2)
          // the hog's third and fourth calls are shed, though two of the four permits are free
          const more = yield* Effect.promise(() =>
            Promise.all(
              [1, 2].map(() => post(url, "tools/call", { name: "slow", arguments: { ms: 1 } }, { token: hog }))
            )
          )
          assert.deepStrictEqual(more.map(reasonOf), ["shed", "shed"])
          assert.include(JSON.stringify(more[0]!.body.error), "this identity already holds 2 concurrent calls")
          // the victim is served while the hog holds its share
          const served = yield* Effect.promise(() =>
            post(url, "tools/call", { name: "slow", arguments: { ms: 1 } }, { token: victim })
          )
          assert.deepStrictEqual(served.body.result?.structuredContent, { slow: true })
          assert.strictEqual((downstream.hits.get("GET /slow") ?? 0) - before, 3)
          abort.abort()
          yield* Effect.promise(() => Promise.all(held))
          for (let i = 0; i < 500 && (yield* active) > 0; i++) yield* Effect.sleep("20 millis")
          // the hog's permits come back when its calls end
          const again = yield* Effect.promise(() =>
            post(url, "tools/call", { name: "slow", arguments: { ms: 1 } }, { token: hog })
          )
          assert.deepStrictEqual(again.body.result?.structuredContent, { slow: true })
        }),
      60_000
    )
  })
})
