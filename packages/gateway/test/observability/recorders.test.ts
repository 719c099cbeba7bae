/**
 * The synchronous recorders write to the `MetricRegistry` of the context they
 * are given, with its contextual attributes, even though they record against
 * a reduced copy of that context (see `Metrics.ts`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Metric } from "effect"
import { Metrics } from "../../src/observability/index.ts"

const callsIn = (registry: Map<any, any>) =>
  Effect.gen(function*() {
    const snapshot = yield* Metric.snapshot.pipe(Effect.provideService(Metric.MetricRegistry, registry))
    return snapshot.filter((m) => m.id === "janus.calls")
  })

describe("metric recorders", () => {
  it.effect("record into the registry of the given context, with its contextual attributes", () =>
    Effect.gen(function*() {
      const a = new Map()
      const b = new Map()
      const inA = Context.make(Metric.MetricRegistry, a)
      const inB = Context.make(Metric.MetricRegistry, b).pipe(
        Context.add(Metric.CurrentMetricAttributes, { instance: "b" })
      )
      Metrics.recordCall(inA as Context.Context<never>, "tools/call", "get_pet", "pets", "ok", 0.01)
      Metrics.recordCall(inB as Context.Context<never>, "tools/call", "get_pet", "pets", "ok", 0.01)
      Metrics.recordCall(inA as Context.Context<never>, "tools/call", "get_pet", "pets", "ok", 0.01)

      const seenA = yield* callsIn(a)
      const seenB = yield* callsIn(b)
      assert.strictEqual(seenA.length, 1)
      assert.strictEqual((seenA[0]!.state as { count: number }).count, 2)
      assert.deepStrictEqual(seenA[0]!.attributes, { outcome: "ok", tool: "get_pet", connection: "pets" })
      assert.strictEqual(seenB.length, 1)
      assert.strictEqual((seenB[0]!.state as { count: number }).count, 1)
      assert.deepStrictEqual(seenB[0]!.attributes, {
        instance: "b",
        outcome: "ok",
        tool: "get_pet",
        connection: "pets"
      })
    }))

  it.effect("series of one metric recorded in turn each keep their own count and attributes", () =>
    Effect.gen(function*() {
      const registry = new Map()
      const context = Context.make(Metric.MetricRegistry, registry) as Context.Context<never>
      for (let i = 0; i < 3; i++) {
        Metrics.recordCacheLookup(context, "config", true)
        Metrics.recordCacheLookup(context, "token", true)
        Metrics.recordCacheLookup(context, "config", false)
      }
      Metrics.recordCacheLookup(context, "token", true)
      const snapshot = yield* Metric.snapshot.pipe(Effect.provideService(Metric.MetricRegistry, registry))
      const counts = snapshot
        .filter((m) => m.id === "janus.cache.lookups")
        .map((m) => `${m.attributes!.cache} ${m.attributes!.result} ${(m.state as { count: number }).count}`)
        .sort()
      assert.deepStrictEqual(counts, ["config hit 3", "config miss 3", "token hit 4"])
    }))

  it.effect("a call that resolved to no catalog name is labelled other, whatever name the client sent", () =>
    Effect.gen(function*() {
      const registry = new Map()
      const context = Context.make(Metric.MetricRegistry, registry) as Context.Context<never>
      Metrics.recordCall(context, "resources/read", null, "docs", "ok", 0.01)
      Metrics.recordCall(context, "tools/call", null, null, "invalid", 0.01)
      const seen = yield* callsIn(registry)
      assert.deepStrictEqual(seen.map((m) => m.attributes).sort((a, b) => a!.outcome! < b!.outcome! ? -1 : 1), [
        { outcome: "invalid", tool: "other", connection: "" },
        { outcome: "ok", tool: "other", connection: "docs" }
      ])
      const durations = (yield* Metric.snapshot.pipe(Effect.provideService(Metric.MetricRegistry, registry)))
        .filter((m) => m.id === "mcp.server.operation.duration")
        .map((m) => `${m.attributes!["mcp.method.name"]} ${m.attributes!["gen_ai.tool.name"]}`)
        .sort()
      assert.deepStrictEqual(durations, ["resources/read other", "tools/call other"])
    }))

  it.effect("a label value is at most 256 characters", () =>
    Effect.gen(function*() {
      const registry = new Map()
      const context = Context.make(Metric.MetricRegistry, registry) as Context.Context<never>
      Metrics.recordCall(context, "tools/call", "t".repeat(5_000), "pets", "ok", 0.01)
      const [series] = yield* callsIn(registry)
      const tool = series!.attributes!.tool!
      assert.isAtMost(tool.length, 256)
      assert.isTrue(tool.startsWith("ttt"))
      assert.include(tool, "5000 characters")
    }))

  // last: it fills the bound of janus.calls for the rest of this file
  it.effect("a metric holds at most 2,000 series; past them, calls fold into one series labelled other", () =>
    Effect.gen(function*() {
      const registry = new Map()
      const context = Context.make(Metric.MetricRegistry, registry) as Context.Context<never>
      for (let i = 0; i < 2_500; i++) Metrics.recordCall(context, "tools/call", `tool_${i}`, "pets", "ok", 0.01)
      const seen = yield* callsIn(registry)
      // the bound is per metric and process-wide: the tests above made a few series of their own
      assert.isAtMost(seen.length, 2_001)
      assert.isAtLeast(seen.length, 1_990)
      const overflow = seen.find((m) => m.attributes!.tool === "other")
      assert.deepStrictEqual(overflow?.attributes, { outcome: "other", tool: "other", connection: "other" })
      assert.strictEqual((overflow!.state as { count: number }).count, 2_500 - (seen.length - 1))
    }))
})
