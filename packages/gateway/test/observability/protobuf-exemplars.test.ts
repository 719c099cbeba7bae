/**
 * `ProtobufExemplars.attach` on encoded OTLP metrics: exemplars land on the
 * matching histogram point and nothing else changes; input it cannot read
 * comes back unchanged. (The exporters' own output is covered end to end in
 * otlp.test.ts, over http/protobuf and grpc.)
 */
import { assert, describe, it } from "@effect/vitest"
import { HistogramExemplars } from "../../src/observability/Exemplars.ts"
import * as ProtobufExemplars from "../../src/observability/ProtobufExemplars.ts"
import { decodeProtobuf, messages } from "./support/Receiver.ts"

const kv = (key: string, value: string) => ({ key, value: { stringValue: value } })

const point = (tool: string) => ({
  attributes: [kv("mcp.method.name", "tools/call"), kv("gen_ai.tool.name", tool)],
  startTimeUnixNano: 1,
  timeUnixNano: 2,
  count: 3,
  sum: 0.6,
  bucketCounts: [1, 2, 0],
  explicitBounds: [0.1, 0.5]
})

const encode = (): Uint8Array => {
  const type = messages.metrics.request
  return type.encode(type.fromObject({
    resourceMetrics: [{
      resource: { attributes: [kv("service.name", "janus-test")] },
      scopeMetrics: [{
        scope: { name: "janus" },
        metrics: [
          { name: "janus.calls", sum: { dataPoints: [{ attributes: [kv("tool", "get_pet")], asInt: 3 }] } },
          { name: "mcp.server.operation.duration", histogram: { dataPoints: [point("get_pet"), point("list_pets")] } }
        ]
      }]
    }]
  })).finish()
}

describe("ProtobufExemplars.attach", () => {
  it("adds the series' exemplars to its histogram point and leaves the rest as it was", () => {
    const histogram = new HistogramExemplars("mcp.server.operation.duration", [0.1, 0.5])
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
    const spanId = "00f067aa0ba902b7"
    histogram.of({ "mcp.method.name": "tools/call", "gen_ai.tool.name": "get_pet" })
      .record({ value: 0.3, traceId, spanId, timeMillis: 1_700_000_000_123 })
    const bytes = encode()
    const before = decodeProtobuf("metrics", bytes) as any
    const after = decodeProtobuf("metrics", ProtobufExemplars.attach(bytes, [histogram])) as any
    const points = after.resourceMetrics[0].scopeMetrics[0].metrics[1].histogram.dataPoints
    assert.deepStrictEqual(points[0].exemplars, [{
      timeUnixNano: "1700000000123000000",
      asDouble: 0.3,
      spanId,
      traceId
    }])
    assert.isUndefined(points[1].exemplars, "list_pets has no exemplar")
    delete points[0].exemplars
    assert.deepStrictEqual(after, before)
  })

  it("returns input it cannot read, and input without exemplars to add, unchanged", () => {
    const histogram = new HistogramExemplars("mcp.server.operation.duration", [0.1, 0.5])
    const garbage = Uint8Array.from([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01])
    histogram.of({ "gen_ai.tool.name": "x" }).record({
      value: 1,
      traceId: "ab".repeat(16),
      spanId: "cd".repeat(8),
      timeMillis: 1
    })
    assert.strictEqual(ProtobufExemplars.attach(garbage, [histogram]), garbage)
    const bytes = encode()
    assert.strictEqual(ProtobufExemplars.attach(bytes, [new HistogramExemplars("other", [1])]), bytes)
  })
})
