/**
 * Studio served by the gateway at `/`: content types, SPA fallback, CSP,
 * caching, and the precedence of the API, MCP and operations routes.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { distDir } from "@janus/studio"
import { ConfigProvider, Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { shown } from "../../src/admin/Config.ts"
import { load } from "../../src/config/JanusConfig.ts"
import { CONTENT_SECURITY_POLICY, handler, loadDist } from "../../src/http/Studio.ts"
import { adminToken, call, client, layer as gatewayLayer, suiteOptions } from "../admin/support.ts"

if (!existsSync(join(distDir, "index.html"))) {
  throw new Error(`Studio is not built (${distDir}); run the tests through \`npm test\` or build @janus/studio first`)
}

layer(gatewayLayer(), suiteOptions)("Studio at /", (it) => {
  it.effect("serves index.html at / and for client routes, with a strict CSP and no-cache", () =>
    Effect.gen(function*() {
      for (const path of ["/", "/connections", "/audit?tool=x", "/tokens/deep/link"]) {
        const reply = yield* call("GET", path)
        assert.strictEqual(reply.status, 200, path)
        assert.match(reply.headers["content-type"]!, /^text\/html/)
        assert.include(reply.text, "<div id=\"app\">")
        assert.strictEqual(reply.headers["content-security-policy"], CONTENT_SECURITY_POLICY)
        assert.strictEqual(reply.headers["cache-control"], "no-cache")
        assert.strictEqual(reply.headers["x-content-type-options"], "nosniff")
      }
      // no inline script: every <script> has a src
      const index = (yield* call("GET", "/")).text
      assert.notMatch(index, /<script(?![^>]*\bsrc=)[^>]*>/)
    }))

  it.effect("serves hashed assets with their content type, immutable, and 404 for a missing file", () =>
    Effect.gen(function*() {
      const index = (yield* call("GET", "/")).text
      const js = /src="(\/assets\/[^"]+\.js)"/.exec(index)![1]!
      const css = /href="(\/assets\/[^"]+\.css)"/.exec(index)![1]!
      const script = yield* call("GET", js)
      assert.strictEqual(script.status, 200)
      assert.match(script.headers["content-type"]!, /^text\/javascript/)
      assert.strictEqual(script.headers["cache-control"], "public, max-age=31536000, immutable")
      const style = yield* call("GET", css)
      assert.match(style.headers["content-type"]!, /^text\/css/)
      const again = yield* call("GET", js, { headers: { "if-none-match": script.headers.etag! } })
      assert.strictEqual(again.status, 304)
      assert.strictEqual((yield* call("GET", "/assets/nope.js")).status, 404)
      assert.strictEqual((yield* call("GET", "/favicon.ico")).status, 404)
    }))

  it.effect("keeps the API, MCP and operations routes: they never answer with the app", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual((yield* call("GET", "/healthz")).body, { status: "ok" })
      const api = yield* call("GET", "/api/v1/connections")
      assert.strictEqual(api.status, 401)
      assert.strictEqual(api.body.error.code, "unauthorized")
      const unknownApi = yield* call("GET", "/api/v2/anything")
      assert.strictEqual(unknownApi.status, 404)
      assert.notInclude(unknownApi.text, "<div id=\"app\">")
      const metrics = yield* call("GET", "/metrics")
      assert.strictEqual(metrics.status, 200)
      assert.notInclude(metrics.text, "<div id=\"app\">")
      const mcp = yield* call("GET", "/mcp/unknown")
      assert.notInclude(mcp.text, "<div id=\"app\">")
    }))

  it.effect("tests a connection: egress rules apply to REST; an MCP upstream reports the federation's state", () =>
    Effect.gen(function*() {
      const admin = client(yield* adminToken())
      const rest = yield* admin.post("/api/v1/connections", {
        kind: "rest",
        name: "loopback-refused",
        baseUrl: "http://127.0.0.1:9"
      })
      assert.strictEqual(rest.status, 201)
      const refused = yield* admin.post(`/api/v1/connections/${rest.body.id}/test`)
      assert.strictEqual(refused.status, 200)
      assert.strictEqual(refused.body.ok, false)
      assert.match(refused.body.detail, /127\.0\.0\.1/)
      const mcp = yield* admin.post("/api/v1/connections", { kind: "mcp", name: "up", url: "http://127.0.0.1:9/mcp" })
      const upstream = yield* admin.post(`/api/v1/connections/${mcp.body.id}/test`)
      assert.strictEqual(upstream.status, 200)
      assert.strictEqual(upstream.body.ok, false)
      const list = yield* admin.get("/api/v1/upstreams")
      assert.strictEqual(list.status, 200)
      assert.isArray(list.body.items)
      assert.strictEqual((yield* admin.post("/api/v1/connections/nope/test")).status, 404)
    }))

  it.effect("GET /api/v1/config lists the effective settings with secrets masked", () =>
    Effect.gen(function*() {
      const admin = client(yield* adminToken())
      const reply = yield* admin.get("/api/v1/config")
      assert.strictEqual(reply.status, 200)
      assert.strictEqual(reply.body.settings.JANUS_HOST, "127.0.0.1")
      assert.strictEqual(reply.body.settings.DATABASE_URL, null)
      assert.strictEqual(reply.body.settings.JANUS_ALLOW_ANONYMOUS, true)
      // the OpenTelemetry variables are listed too (unset here)
      assert.strictEqual(reply.body.settings.OTEL_EXPORTER_OTLP_ENDPOINT, null)
      assert.strictEqual(reply.headers["cache-control"], "no-store")
    }))
})

describe("the OpenTelemetry settings on /api/v1/config", () => {
  it.effect("shows them as read, hides the export headers and credentials in the endpoint", () =>
    Effect.gen(function*() {
      const env = {
        OTEL_EXPORTER_OTLP_ENDPOINT: "https://user:pw@collector.example.com:4318",
        OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20abc",
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: "x-key=k3y",
        OTEL_SERVICE_NAME: "janus-eu",
        OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
        OTEL_TRACES_SAMPLER_ARG: "0.01",
        OTEL_PROPAGATORS: "tracecontext,baggage,b3multi"
      }
      const settings = shown(
        yield* load.pipe(
          Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))
        )
      )
      assert.deepInclude(settings, {
        OTEL_EXPORTER_OTLP_ENDPOINT: "https://hidden@collector.example.com:4318",
        OTEL_SERVICE_NAME: "janus-eu",
        OTEL_EXPORTER_OTLP_HEADERS: "(set, hidden)",
        OTEL_EXPORTER_OTLP_TRACES_HEADERS: "(set, hidden)",
        OTEL_EXPORTER_OTLP_METRICS_HEADERS: null,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: null,
        OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
        OTEL_TRACES_SAMPLER_ARG: 0.01,
        OTEL_PROPAGATORS: "tracecontext, baggage, b3multi",
        OTEL_RESOURCE_ATTRIBUTES: "",
        OTEL_METRIC_EXPORT_INTERVAL: 60_000,
        OTEL_BSP_SCHEDULE_DELAY: 5_000
      })
      assert.notInclude(JSON.stringify(settings), "abc")
      assert.notInclude(JSON.stringify(settings), "k3y")
      assert.notInclude(JSON.stringify(settings), "pw")
    }))
})

describe("Studio handler without a build", () => {
  it.effect("answers 503 saying how to build, and still 404 for reserved paths", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "janus-studio-"))
      try {
        assert.isUndefined(loadDist(dir))
        const run = (url: string) =>
          handler(undefined).pipe(
            Effect.provideService(
              HttpServerRequest.HttpServerRequest,
              HttpServerRequest.fromWeb(new Request(`http://janus${url}`))
            )
          )
        assert.strictEqual((yield* run("/")).status, 503)
        assert.strictEqual((yield* run("/api/v1/x")).status, 404)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }))
})
