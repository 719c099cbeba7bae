/**
 * Issue #7: the official conformance scenarios `tools-call-*` and
 * `input-required-result-*` run through Janus against real upstreams written
 * with the official SDKs (`./conformance-upstream.ts`) report no FAILURE that
 * the upstream alone does not.
 *
 * Each scenario runs twice: (i) against the upstream's own URL, (ii) against
 * `/servers/conformance/mcp` of a whole Janus instance (`GatewayTesting.layer()`)
 * whose virtual server `conformance` holds `conf/*` and `conf2/*`:
 * - `tools-call-*`: `@modelcontextprotocol/conformance` 0.1.16 (the pinned
 *   release, revision 2025-11-25) against the SDK v1 upstream `conf`;
 * - `input-required-result-*`: conformance-next (0.2.0-alpha.12) at 2026-07-28
 *   against the SDK v2 upstream `conf2`.
 *
 * The suite calls tools by bare names (`test_simple_text`), so the virtual
 * server serves them with `bareNames` (the two upstreams' names are unique);
 * `/mcp` keeps them prefixed (`conf/test_simple_text`).
 *
 * Issue #17: `resources-*`, `prompts-*` and `completion-complete` (0.1.16,
 * 2025-11-25) against the v1 upstream alone and through Janus with that same
 * server reached over streamable HTTP (`conf`), HTTP+SSE (`confsse`) and
 * stdio (`confstdio`, `conformance-stdio.ts` run by Node), each alone in a
 * `bareNames` virtual server (the suite asks for bare prompt names); and
 * with conformance-next at `--spec-version 2026-07-28` against the v2
 * upstream alone and through Janus (`features-modern`), where no check fails
 * through Janus at all.
 *
 * No scenario fails through Janus only (the known-gap lists are empty);
 * non-tool-request fails alone too ({@link MODERN_BASELINE}). Not run: the 2026-07-28 runs of
 * `tools-call-*` (the v1 upstream does not speak that revision, so "the
 * upstream alone" is no baseline).
 */
import { assert, layer } from "@effect/vitest"
import { Connections, VirtualServers } from "@janus/storage"
import { Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import * as Path from "node:path"
import * as GatewayTesting from "../../src/testing.ts"
import { NEXT, type Run, run, STABLE, summarize } from "../support/Conformance.ts"
import * as ConformanceUpstream from "./conformance-upstream.ts"
import { waitUntil } from "./support.ts"

/**
 * Every FAILURE through Janus also fails against the upstream alone, except
 * `knownGaps` (asserted to still fail through Janus only); the upstream alone
 * passes every scenario of `baseline` (so the comparison is not vacuous).
 */
const compare = (
  runs: ReadonlyArray<Run>,
  scenarios: ReadonlyArray<string>,
  baseline: ReadonlyArray<string>,
  knownGaps: ReadonlyArray<string>
) => {
  const regressions: Array<string> = []
  for (const r of runs) {
    for (const c of r.checks) {
      if (c.status === "FAILURE") console.log(`  ${r.label} ${r.scenario} FAILURE ${c.id}: ${c.errorMessage}`)
    }
  }
  for (const scenario of scenarios) {
    const alone = runs.find((r) => r.label === "upstream" && r.scenario === scenario)!
    const through = runs.find((r) => r.label === "janus" && r.scenario === scenario)!
    assert.isAbove(alone.checks.length, 0, `${summarize(alone)}\n${alone.output}`)
    assert.isAbove(through.checks.length, 0, `${summarize(through)}\n${through.output}`)
    const failed = new Set(alone.checks.filter((c) => c.status === "FAILURE").map((c) => c.id))
    if (baseline.includes(scenario)) assert.strictEqual(failed.size, 0, `${summarize(alone)}\n${alone.output}`)
    const extra = through.checks.filter((c) => c.status === "FAILURE" && !failed.has(c.id))
    if (knownGaps.includes(scenario)) {
      assert.isAbove(extra.length, 0, `${summarize(through)}: passes now; drop it from the known gaps`)
      continue
    }
    for (const check of extra) regressions.push(`${scenario} ${check.id}: ${check.errorMessage}`)
  }
  assert.deepStrictEqual(regressions, [])
}

/** Every `tools-call-*` scenario of 0.1.16 (revisions 2025-06-18 and 2025-11-25). */
const scenarios = [
  "tools-call-simple-text",
  "tools-call-image",
  "tools-call-audio",
  "tools-call-embedded-resource",
  "tools-call-mixed-content",
  "tools-call-with-logging",
  "tools-call-error",
  "tools-call-with-progress",
  "tools-call-sampling",
  "tools-call-elicitation"
]

/**
 * Failures through Janus that the upstream alone does not report: gaps in
 * `src`, asserted to still fail so that fixing one makes this list shrink.
 * Empty: with-logging (`logging/setLevel`, relayed `notifications/message`),
 * sampling and elicitation (relayed server-to-client requests) pass since
 * the transports provide `UpstreamRelay` hooks (`src/mcp/ClientRelay.ts`).
 */
export const KNOWN_GAPS: ReadonlyArray<string> = []

/** The `input-required-result-*` scenarios of conformance-next (2026-07-28 only). */
const modernScenarios = [
  "input-required-result-basic-elicitation",
  "input-required-result-basic-sampling",
  "input-required-result-basic-list-roots",
  "input-required-result-request-state",
  "input-required-result-multiple-input-requests",
  "input-required-result-multi-round",
  "input-required-result-missing-input-response",
  "input-required-result-non-tool-request",
  "input-required-result-result-type",
  "input-required-result-unsupported-methods",
  "input-required-result-tampered-state",
  "input-required-result-capability-check",
  "input-required-result-ignore-extra-params",
  "input-required-result-validate-input"
]

/**
 * The scenarios whose tools the v2 upstream implements (it passes them
 * alone): all but non-tool-request, which calls `prompts/get` on
 * `test_input_required_result_prompt` (a prompt; the upstream has none and
 * Janus serves no prompts), so it fails alone and through Janus alike.
 */
const MODERN_BASELINE = modernScenarios.filter((s) => s !== "input-required-result-non-tool-request")

/**
 * Empty: capability-check passes since a call forwards its caller's declared
 * client capabilities to 2026-07-28 upstreams.
 */
export const MODERN_KNOWN_GAPS: ReadonlyArray<string> = []

class ModernUpstream extends Context.Service<ModernUpstream, ConformanceUpstream.ConformanceUpstream>()(
  "test/federation/ConformanceModernUpstream"
) {}

const ModernUpstreamLive = Layer.effect(
  ModernUpstream,
  Effect.acquireRelease(Effect.promise(ConformanceUpstream.startModern), (u) => Effect.promise(() => u.stop()))
)

class Upstream extends Context.Service<Upstream, ConformanceUpstream.ConformanceUpstream>()(
  "test/federation/ConformanceUpstream"
) {}

const UpstreamLive = Layer.effect(
  Upstream,
  Effect.acquireRelease(Effect.promise(() => ConformanceUpstream.start()), (u) => Effect.promise(() => u.stop()))
)

class SseUpstream extends Context.Service<SseUpstream, ConformanceUpstream.ConformanceUpstream>()(
  "test/federation/ConformanceSseUpstream"
) {}

const SseUpstreamLive = Layer.effect(
  SseUpstream,
  Effect.acquireRelease(Effect.promise(ConformanceUpstream.startSse), (u) => Effect.promise(() => u.stop()))
)

/** The same v1 server as a stdio program. */
const STDIO_SERVER = Path.join(import.meta.dirname, "conformance-stdio.ts")

/** The feature views: one virtual server per upstream transport (and the 2026-07-28 upstream). */
const FEATURE_VIEWS = {
  "streamable-http": "features",
  sse: "features-sse",
  stdio: "features-stdio",
  modern: "features-modern"
} as const

const Seed = Layer.effectDiscard(Effect.gen(function*() {
  const upstream = yield* Upstream
  yield* (yield* Connections).create({
    kind: "mcp",
    name: "conf",
    url: upstream.url,
    transport: "streamable-http",
    egressAllowList: ["127.0.0.1"],
    timeoutMs: 20_000
  })
  yield* (yield* Connections).create({
    kind: "mcp",
    name: "conf2",
    url: (yield* ModernUpstream).url,
    transport: "streamable-http",
    egressAllowList: ["127.0.0.1"],
    timeoutMs: 20_000
  })
  yield* (yield* VirtualServers).create({ name: "conformance", tools: ["conf/*", "conf2/*"], bareNames: true })
  yield* (yield* Connections).create({
    kind: "mcp",
    name: "confsse",
    url: (yield* SseUpstream).url,
    transport: "sse",
    egressAllowList: ["127.0.0.1"],
    timeoutMs: 20_000
  })
  yield* (yield* Connections).create({
    kind: "mcp",
    transport: "stdio",
    name: "confstdio",
    command: process.execPath,
    args: [STDIO_SERVER],
    timeoutMs: 20_000
  })
  const views = yield* VirtualServers
  yield* views.create({ name: FEATURE_VIEWS["streamable-http"], tools: ["conf/*"], bareNames: true })
  yield* views.create({ name: FEATURE_VIEWS.sse, tools: ["confsse/*"], bareNames: true })
  yield* views.create({ name: FEATURE_VIEWS.stdio, tools: ["confstdio/*"], bareNames: true })
  yield* views.create({ name: FEATURE_VIEWS.modern, tools: ["conf2/*"], bareNames: true })
}))

const TestLayer = Seed.pipe(
  Layer.provideMerge(GatewayTesting.layer({ config: { JANUS_STDIO_COMMANDS: [process.execPath] } })),
  Layer.provideMerge(Layer.mergeAll(UpstreamLive, ModernUpstreamLive, SseUpstreamLive))
)

const viewUrl = (view: string) =>
  HttpServer.addressFormattedWith((base) => Effect.succeed(new URL(`/servers/${view}/mcp`, base).href))

const janusUrl = HttpServer.addressFormattedWith((base) =>
  Effect.succeed(new URL("/servers/conformance/mcp", base).href)
)

const listedNames = (url: string, method = "tools/list") =>
  Effect.promise(async () => {
    const response = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method,
        params: {
          _meta: {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
          }
        }
      })
    })
    const text = await response.text()
    return [...text.matchAll(/"name":"([^"]+)"/g)].map((m) => m[1])
  })

layer(TestLayer, { excludeTestServices: true, timeout: 300_000 })("conformance through Janus (issue #7)", (it) => {
  it.effect(
    "tools-call-*: no FAILURE through Janus that the upstream alone does not report",
    () =>
      Effect.gen(function*() {
        const upstream = yield* Upstream
        const url = yield* janusUrl
        // the virtual server lists the upstream's tools under their bare names once federation has listed them
        yield* waitUntil(Effect.map(listedNames(url), (names) => names.includes("test_simple_text")), "federated tools")
        const runs = yield* Effect.all(
          scenarios.flatMap((
            scenario
          ) => [run("upstream", STABLE, upstream.url, scenario), run("janus", STABLE, url, scenario)]),
          { concurrency: 6 }
        )
        console.log(runs.map(summarize).join("\n"))
        compare(runs, scenarios, scenarios, KNOWN_GAPS)
      }),
    { timeout: 300_000 }
  )

  it.effect(
    "input-required-result-*: no FAILURE through Janus that the upstream alone does not report",
    () =>
      Effect.gen(function*() {
        const upstream = yield* ModernUpstream
        const url = yield* janusUrl
        yield* waitUntil(
          Effect.map(listedNames(url), (names) => names.includes("test_input_required_result_elicitation")),
          "federated tools"
        )
        const runs = yield* Effect.all(
          modernScenarios.flatMap((scenario) => [
            run("upstream", NEXT, upstream.url, scenario, "2026-07-28"),
            run("janus", NEXT, url, scenario, "2026-07-28")
          ]),
          { concurrency: 6 }
        )
        console.log(runs.map(summarize).join("\n"))
        compare(runs, modernScenarios, MODERN_BASELINE, MODERN_KNOWN_GAPS)
      }),
    { timeout: 300_000 }
  )

  it.effect(
    "resources-*, prompts-*, completion-complete: every check passing against the upstream alone passes through Janus, over streamable HTTP, HTTP+SSE and stdio",
    () =>
      Effect.gen(function*() {
        const upstream = yield* Upstream
        const transports = ["streamable-http", "sse", "stdio"] as const
        const urls = yield* Effect.forEach(transports, (t) => viewUrl(FEATURE_VIEWS[t]))
        for (const url of urls) {
          yield* waitUntil(
            Effect.map(listedNames(url, "prompts/list"), (names) => names.includes("test_simple_prompt")),
            `federated prompts at ${url}`
          )
        }
        const runs = yield* Effect.all(
          featureScenarios.flatMap((scenario) => [
            run("upstream", STABLE, upstream.url, scenario),
            ...transports.map((t, i) => run(t, STABLE, urls[i]!, scenario))
          ]),
          { concurrency: 6 }
        )
        console.log(runs.map(summarize).join("\n"))
        for (const t of transports) {
          const relabelled = runs.filter((r) => r.label === "upstream" || r.label === t).map((r) =>
            r.label === t ? { ...r, label: "janus" } : r
          )
          compare(relabelled, featureScenarios, featureScenarios, [])
        }
      }),
    { timeout: 300_000 }
  )

  it.effect(
    "resources-*, prompts-*, completion-complete at --spec-version 2026-07-28: no check fails through Janus",
    () =>
      Effect.gen(function*() {
        const upstream = yield* ModernUpstream
        const url = yield* viewUrl(FEATURE_VIEWS.modern)
        yield* waitUntil(
          Effect.map(listedNames(url, "prompts/list"), (names) => names.includes("test_simple_prompt")),
          "federated prompts"
        )
        const runs = yield* Effect.all(
          modernFeatureScenarios.flatMap((scenario) => [
            run("upstream", NEXT, upstream.url, scenario, "2026-07-28"),
            run("janus", NEXT, url, scenario, "2026-07-28")
          ]),
          { concurrency: 6 }
        )
        console.log(runs.map(summarize).join("\n"))
        compare(runs, modernFeatureScenarios, [], [])
        const failed = runs.filter((r) => r.label === "janus").flatMap((r) =>
          r.checks.filter((c) => c.status === "FAILURE").map((c) => `${r.scenario} ${c.id}: ${c.errorMessage}`)
        )
        assert.deepStrictEqual(failed, [])
      }),
    { timeout: 300_000 }
  )
})

/** The scenarios of resources, prompts and completion in 0.1.16 (2025-06-18 and 2025-11-25). */
const featureScenarios = [
  "resources-list",
  "resources-read-text",
  "resources-read-binary",
  "resources-templates-read",
  "resources-subscribe",
  "resources-unsubscribe",
  "prompts-list",
  "prompts-get-simple",
  "prompts-get-with-args",
  "prompts-get-embedded-resource",
  "prompts-get-with-image",
  "completion-complete"
]

/** Those of conformance-next at 2026-07-28 (no subscribe: that revision subscribes through listen). */
const modernFeatureScenarios = [
  "resources-list",
  "resources-read-text",
  "resources-read-binary",
  "resources-templates-read",
  "sep-2164-resource-not-found",
  "prompts-list",
  "prompts-get-simple",
  "prompts-get-with-args",
  "prompts-get-embedded-resource",
  "prompts-get-with-image",
  "completion-complete"
]
