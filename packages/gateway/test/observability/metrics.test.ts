/**
 * `GET /metrics` after real traffic, parsed with a Prometheus text-format
 * parser (prom2javascript), and the Grafana dashboard and
 * Prometheus alert rules of deploy/observability checked against it: every
 * metric (and every label matcher) they reference is exported.
 */
import { assert, layer } from "@effect/vitest"
import { AdminTokens, ClientTokens, Connections, Endpoints, Secrets } from "@janus/storage"
import { parser as promql } from "@prometheus-io/lezer-promql"
import { Effect, Layer, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { getMetricsFromIterator, type PromMetric, type PromMetrics } from "prom2javascript"
import * as Yaml from "yaml"
import { Metrics, Prometheus } from "../../src/observability/index.ts"
import { stateless } from "../mcp/http-client.ts"
import * as Downstream from "../support/Downstream.ts"
import * as ObservedGateway from "./support/ObservedGateway.ts"

const DEPLOY = Path.resolve(import.meta.dirname, "../../../../deploy/observability")

const base = HttpServer.addressFormattedWith((url) => Effect.succeed(url))

const seed = Effect.gen(function*() {
  const downstream = yield* Downstream.Downstream
  const connections = yield* Connections
  const endpoints = yield* Endpoints
  yield* (yield* Secrets).set("pets-key", Redacted.make("s3cr3t-value-123"))
  const pets = yield* connections.create({
    kind: "rest",
    name: "pets",
    baseUrl: downstream.url,
    auth: { scheme: "bearer", secret: "pets-key" },
    egressAllowList: ["127.0.0.1"]
  })
  const flaky = yield* connections.create({
    kind: "rest",
    name: "flaky",
    baseUrl: downstream.url,
    egressAllowList: ["127.0.0.1"],
    breaker: { consecutiveFailures: 2, openMs: 60_000 },
    retry: { maxAttempts: 1, initialDelayMs: 0, maxDelayMs: 0 }
  })
  const object = (properties: Record<string, unknown>) => ({ type: "object", properties })
  yield* endpoints.create({
    connectionId: pets.id,
    name: "get_pet",
    method: "GET",
    pathTemplate: "/pets/{id}",
    arguments: { id: "path" },
    inputSchema: { ...object({ id: { type: "string" } }), required: ["id"] }
  })
  yield* endpoints.create({
    connectionId: pets.id,
    name: "slow",
    method: "GET",
    pathTemplate: "/slow",
    arguments: { ms: "query" },
    inputSchema: object({ ms: { type: "string" } })
  })
  yield* endpoints.create({
    connectionId: flaky.id,
    name: "flaky_fail",
    method: "GET",
    pathTemplate: "/fail",
    inputSchema: object({})
  })
})

const traffic = Effect.gen(function*() {
  const url = yield* base
  const mcp = `${url}/mcp`
  // ok calls
  for (const id of ["1", "2"]) {
    const reply = yield* stateless(mcp, "tools/call", { name: "get_pet", arguments: { id } })
    assert.strictEqual(reply.status, 200)
  }
  // a client token's two calls: its verification is looked up (a miss), then found cached (a hit)
  const client = yield* (yield* ClientTokens).create({ name: "metrics cache" })
  for (let i = 0; i < 2; i++) {
    const reply = yield* stateless(mcp, "tools/list", {}, {
      authorization: `Bearer ${Redacted.value(client.plaintext)}`
    })
    assert.strictEqual(reply.status, 200)
  }
  // the breaker of `flaky` opens after two counted 503s, counted once two identities have failed on it:
  // anonymous (not counted), the client token (1), anonymous (2, open); the fourth call is refused
  const clientHeaders = { authorization: `Bearer ${Redacted.value(client.plaintext)}` }
  for (const headers of [{}, clientHeaders, {}, {}]) {
    yield* stateless(mcp, "tools/call", { name: "flaky_fail", arguments: {} }, headers)
  }
  // 6 slow calls against MCP_MAX_CONCURRENT_CALLS = 3: 3 are shed
  const slow = yield* Effect.forEach(
    Array.from({ length: 6 }, () => stateless(mcp, "tools/call", { name: "slow", arguments: { ms: "600" } })),
    (call) => call,
    { concurrency: "unbounded" }
  )
  assert.strictEqual(slow.filter((r) => r.body?.error?.data?.reason === "shed").length, 3)
  // the Studio event stream (one subscriber for a moment), before the burst: it draws on the same per-IP bucket
  const admin = yield* (yield* AdminTokens).create({ name: "metrics test" })
  yield* Effect.promise(async () => {
    const abort = new AbortController()
    const response = await fetch(`${url}/api/v1/events`, {
      headers: { authorization: `Bearer ${Redacted.value(admin.plaintext)}`, accept: "text/event-stream" },
      signal: abort.signal
    })
    assert.strictEqual(response.status, 200)
    await response.body!.getReader().read()
    abort.abort()
  })
  // a burst past the per-IP limit (burst 30): the limiter refuses some with 429
  const burst = yield* Effect.forEach(
    Array.from({ length: 45 }, () => stateless(mcp, "tools/list")),
    (request) => request,
    { concurrency: "unbounded" }
  )
  assert.isAtLeast(burst.filter((r) => r.status === 429).length, 5)
  // readiness, a 404
  yield* Effect.promise(() => fetch(`${url}/readyz`).then((r) => r.text()))
  // a method no route serves (GET of an unknown path is Studio's SPA fallback, route "/*")
  yield* Effect.promise(() => fetch(`${url}/nowhere`, { method: "DELETE" }).then((r) => r.text()))
  // Stand-in for recipe step 7 (the response cache in RestCatalog records its lookups).
  yield* Metrics.cacheLookup("response", true)
  yield* Metrics.cacheLookup("response", false)
  // the event log wrapper flushes once a second
  yield* Effect.sleep("1500 millis")
})

const scrape = Effect.gen(function*() {
  const url = yield* base
  return yield* Effect.promise(async () => {
    const response = await fetch(`${url}/metrics`)
    return { status: response.status, contentType: response.headers.get("content-type"), text: await response.text() }
  })
})

/** Parses the exposition; the parser rejects malformed lines and inconsistent histograms. */
const parsePrometheus = (text: string): Effect.Effect<PromMetrics> =>
  Effect.promise(() => getMetricsFromIterator(text.split("\n")[Symbol.iterator]()))

interface Sample {
  readonly labels: Readonly<Record<string, string>>
  readonly value?: number
  readonly count?: number
  readonly sum?: number
  readonly buckets?: Readonly<Record<string, number>>
}

const family = (families: PromMetrics, name: string): PromMetric & { readonly data: ReadonlyArray<Sample> } => {
  const found = families[name]
  assert.isDefined(found, `/metrics has no ${name}`)
  return found as PromMetric & { readonly data: ReadonlyArray<Sample> }
}

const sample = (f: { readonly data: ReadonlyArray<Sample> }, labels: Record<string, string>): Sample | undefined =>
  f.data.find((m) => Object.entries(labels).every(([k, v]) => (m.labels[k] ?? "") === v))

// --- PromQL references ---------------------------------------------------------

/** Grafana's variables, replaced so the expressions are plain PromQL. */
const grafanaToPromql = (expr: string): string =>
  expr.replaceAll("$__rate_interval", "5m").replaceAll("$__interval", "1m").replace(/\$\{?[a-z_]+\}?/gi, ".*")

interface Reference {
  readonly expr: string
  readonly metric: string
  readonly matchers: ReadonlyArray<string>
}

/** Every metric name (and the label names matched on it) in a PromQL expression. */
const references = (expr: string): Array<Reference> => {
  const out: Array<Reference> = []
  const tree = promql.parse(expr)
  let error: string | undefined
  tree.iterate({
    enter: (node) => {
      if (node.type.isError) error = `syntax error at ${node.from} in ${expr}`
      if (node.name !== "VectorSelector") return
      const name = node.node.getChild("Identifier")
      const matchers: Array<string> = []
      const list = node.node.getChild("LabelMatchers")
      list?.cursor().iterate((inner) => {
        if (inner.name === "LabelName") matchers.push(expr.slice(inner.from, inner.to))
      })
      if (name !== null) out.push({ expr, metric: expr.slice(name.from, name.to), matchers })
    }
  })
  assert.isUndefined(error)
  return out
}

const dashboardExpressions = (): Array<string> => {
  const dashboard = JSON.parse(Fs.readFileSync(Path.join(DEPLOY, "grafana-dashboard.json"), "utf8"))
  const panels = (list: ReadonlyArray<any>): Array<any> => list.flatMap((p) => [p, ...panels(p.panels ?? [])])
  const targets = panels(dashboard.panels).flatMap((p) => p.targets ?? []).map((t: any) => t.expr as string)
  const variables = dashboard.templating.list
    .filter((v: any) => v.type === "query")
    .map((v: any) => (v.definition as string).replace(/^label_values\((.*),\s*\w+\)$/, "$1"))
  return [...targets, ...variables].map(grafanaToPromql)
}

const alertExpressions = (): Array<string> => {
  const rules = Yaml.parse(Fs.readFileSync(Path.join(DEPLOY, "prometheus-rules.yaml"), "utf8"))
  return rules.groups.flatMap((g: any) => g.rules.map((r: any) => r.expr as string))
}

/** Histogram and counter series names back to their family. */
const familyOf = (metric: string, exported: PromMetrics): string | undefined => {
  if (metric in exported) return metric
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    if (metric.endsWith(suffix)) {
      const name = metric.slice(0, -suffix.length)
      if (exported[name]?.type === "histogram") return name
    }
  }
  return undefined
}

/** Series Prometheus records itself, and labels it adds to every series it scrapes. */
const PROMETHEUS_OWN = new Set(["up"])
const TARGET_LABELS = new Set(["job", "instance"])

// A configuration document that declares nothing, so `janus_config_file_*` are exported (and alerts can use them).
const configFile = Path.join(Fs.mkdtempSync(Path.join(Os.tmpdir(), "janus-metrics-")), "janus.yaml")
Fs.writeFileSync(configFile, "apiVersion: janus/v1\nkind: Configuration\n")

const TestLayer = Layer.effectDiscard(seed).pipe(
  Layer.provideMerge(ObservedGateway.layer({
    config: {
      MCP_MAX_CONCURRENT_CALLS: 3,
      RATE_LIMIT_IP: 5,
      RATE_LIMIT_IP_BURST: 30,
      JANUS_CONFIG_FILE: Option.some(configFile)
    }
  })),
  Layer.provideMerge(Downstream.layer)
)

layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("/metrics after traffic", (it) => {
  it.effect("is Prometheus text a parser reads, with every metric of issue #8", () =>
    Effect.gen(function*() {
      yield* traffic
      const scraped = yield* scrape
      assert.strictEqual(scraped.status, 200)
      assert.strictEqual(scraped.contentType, Prometheus.CONTENT_TYPE)
      const families = yield* parsePrometheus(scraped.text)

      const http = family(families, "http_server_request_duration_seconds")
      assert.strictEqual(http.type, "histogram")
      const mcpOk = sample(http, { http_request_method: "POST", http_route: "/mcp", http_response_status_code: "200" })
      assert.isAtLeast(mcpOk?.count ?? 0, 8)
      assert.isDefined(sample(http, { http_route: "", http_response_status_code: "404" }))
      assert.isDefined(sample(http, { http_route: "/mcp", http_response_status_code: "429" }))
      assert.strictEqual(family(families, "http_server_active_requests").type, "gauge")

      const calls = family(families, "janus_calls_total")
      assert.strictEqual(calls.type, "counter")
      assert.strictEqual(sample(calls, { outcome: "ok", tool: "get_pet", connection: "pets" })?.value, 2)
      assert.strictEqual(sample(calls, { outcome: "error", tool: "flaky_fail", connection: "flaky" })?.value, 3)
      assert.strictEqual(sample(calls, { outcome: "breaker_open", tool: "flaky_fail", connection: "flaky" })?.value, 1)
      assert.strictEqual(sample(calls, { outcome: "ok", tool: "slow", connection: "pets" })?.value, 3)
      // a shed call never resolved its tool: the client-chosen name is not a label
      assert.strictEqual(sample(calls, { outcome: "shed", tool: "other", connection: "" })?.value, 3)

      const latency = family(families, "mcp_server_operation_duration_seconds")
      assert.strictEqual(latency.type, "histogram")
      assert.strictEqual(sample(latency, { gen_ai_tool_name: "slow", mcp_method_name: "tools/call" })?.count, 3)
      const slowSum = sample(latency, { gen_ai_tool_name: "slow" })?.sum ?? 0
      assert.isAtLeast(slowSum, 3 * 0.55)
      assert.strictEqual(sample(latency, { gen_ai_tool_name: "flaky_fail", error_type: "breaker_open" })?.count, 1)

      assert.strictEqual(family(families, "janus_calls_active").data[0]?.value, 0)
      assert.isAtLeast(
        sample(family(families, "janus_admission_refusals_total"), { reason: "rate_limited" })?.value ?? 0,
        5
      )
      assert.strictEqual(sample(family(families, "janus_breaker_state"), { connection: "flaky" })?.value, 2)
      assert.strictEqual(sample(family(families, "janus_breaker_state"), { connection: "pets" })?.value, 0)
      const caches = family(families, "janus_cache_lookups_total")
      assert.strictEqual(sample(caches, { cache: "response", result: "hit" })?.value, 1)
      // every cache the dashboard's panels show is counted, not only the response cache
      assert.strictEqual(sample(caches, { cache: "token", result: "miss" })?.value, 1)
      // the second tools/list and the flaky call
      assert.strictEqual(sample(caches, { cache: "token", result: "hit" })?.value, 2)
      for (const cache of ["config", "secret"]) {
        assert.isAtLeast(sample(caches, { cache, result: "miss" })?.value ?? 0, 1, `${cache} misses`)
        assert.isAtLeast(sample(caches, { cache, result: "hit" })?.value ?? 0, 1, `${cache} hits`)
      }

      const flushSize = family(families, "janus_event_log_flush_size")
      assert.strictEqual(flushSize.type, "histogram")
      assert.isAtLeast(flushSize.data[0]?.sum ?? 0, 9) // one `calls` event per attempt
      assert.isAtLeast(family(families, "janus_event_log_flush_lag_seconds").data[0]?.count ?? 0, 1)
      assert.isAtLeast(family(families, "janus_event_log_flush_duration_seconds").data[0]?.count ?? 0, 1)
      assert.strictEqual(family(families, "janus_event_log_buffered").type, "gauge")

      assert.strictEqual(family(families, "studio_sse_subscribers").type, "gauge")
      const drops = family(families, "studio_sse_dropped_total")
      for (const reason of ["coalesced", "overflow", "replay", "blocked"]) assert.isDefined(sample(drops, { reason }))
      assert.strictEqual(family(families, "janus_audit_dropped_total").data[0]?.value, 0)
      assert.strictEqual(family(families, "janus_ready").data[0]?.value, 1)
      assert.strictEqual(family(families, "janus_draining").data[0]?.value, 0)
      assert.strictEqual(family(families, "janus_config_file_valid").data[0]?.value, 1)
      assert.strictEqual(
        sample(family(families, "janus_config_file_applies_total"), { outcome: "unchanged" })?.value,
        1
      )

      // No secret and no argument reaches the exposition.
      assert.notInclude(scraped.text, "s3cr3t-value-123")
    }))

  it.effect("every metric and label the dashboard and the alert rules use is exported", () =>
    Effect.gen(function*() {
      const scraped = yield* scrape
      const exported = yield* parsePrometheus(scraped.text)
      const expressions = [...dashboardExpressions(), ...alertExpressions()]
      assert.isAtLeast(expressions.length, 30)
      const refs = expressions.flatMap(references)
      const used = new Set<string>()
      for (const ref of refs) {
        if (PROMETHEUS_OWN.has(ref.metric)) continue
        const name = familyOf(ref.metric, exported)
        assert.isDefined(name, `${ref.metric} (in ${ref.expr}) is not exported by the gateway`)
        used.add(name!)
        const labels = new Set(family(exported, name!).data.flatMap((m) => Object.keys(m.labels)))
        for (const matcher of ref.matchers) {
          if (TARGET_LABELS.has(matcher) || matcher === "le") continue
          assert.isTrue(labels.has(matcher), `${ref.metric} has no label ${matcher} (in ${ref.expr})`)
        }
      }
      // The dashboard and alerts cover what issue #8 asks for.
      for (
        const name of [
          "http_server_request_duration_seconds",
          "janus_calls_total",
          "mcp_server_operation_duration_seconds",
          "janus_calls_active",
          "janus_breaker_state",
          "janus_cache_lookups_total",
          "janus_admission_refusals_total",
          "studio_sse_subscribers",
          "studio_sse_dropped_total",
          "janus_event_log_flush_size",
          "janus_event_log_flush_lag_seconds",
          "janus_ready",
          "janus_draining",
          "janus_config_file_valid"
        ]
      ) assert.isTrue(used.has(name), `neither the dashboard nor the alerts use ${name}`)
      // Alerts for shedding, breaker open, event-stream drops and readiness exist.
      const alerts = Yaml.parse(Fs.readFileSync(Path.join(DEPLOY, "prometheus-rules.yaml"), "utf8"))
        .groups.flatMap((g: any) => g.rules.map((r: any) => r.alert as string))
      for (
        const alert of [
          "JanusShedding",
          "JanusBreakerOpen",
          "JanusEventStreamDrops",
          "JanusNotReady",
          "JanusConfigFileInvalid"
        ]
      ) {
        assert.include(alerts, alert)
      }
    }))
})
