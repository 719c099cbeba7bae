/**
 * The official MCP conformance suite against the endpoint on 127.0.0.1.
 *
 * `@modelcontextprotocol/conformance` 0.1.16 (the pinned release) has six of
 * the required server scenarios; the other five (server-session-lifecycle,
 * server-stateless, caching, http-header-validation,
 * http-custom-header-server-validation) exist only in its 0.2.0 line, installed
 * as `conformance-next` (0.2.0-alpha.12). Each CLI is run by its package path
 * (both packages declare the `conformance` bin).
 */
import { assert, layer } from "@effect/vitest"
import { Connections, Endpoints } from "@janus/storage"
import { Effect, Layer } from "effect"
import * as GatewayTesting from "../../src/testing.ts"
import { NEXT, run, STABLE, summarize } from "../support/Conformance.ts"
import * as Downstream from "../support/Downstream.ts"
import { mcpUrl, serverLayer } from "./fixtures.ts"

const seedPets = Effect.gen(function*() {
  const downstream = yield* Downstream.Downstream
  const pets = yield* (yield* Connections).create({
    kind: "rest",
    name: "pets",
    baseUrl: downstream.url,
    egressAllowList: ["127.0.0.1"]
  })
  // a tool without required arguments, which the suite's header checks call with whatever they send
  yield* (yield* Endpoints).create({
    connectionId: pets.id,
    name: "echo",
    description: "Answers with plain text",
    method: "GET",
    pathTemplate: "/text",
    inputSchema: { type: "object", properties: {} }
  })
  yield* (yield* Endpoints).create({
    connectionId: pets.id,
    name: "get_pet",
    description: "Fetch a pet by id",
    method: "GET",
    pathTemplate: "/pets/{id}",
    arguments: { id: "path" },
    // x-mcp-header: 2026-07-28 clients mirror the argument into an Mcp-Param-Pet-Id header
    inputSchema: {
      type: "object",
      properties: { id: { type: "string", "x-mcp-header": "Pet-Id" } },
      required: ["id"]
    }
  })
})

const stableScenarios = [
  "server-initialize",
  "ping",
  "logging-set-level",
  "tools-list",
  "server-sse-polling",
  "server-sse-multiple-streams",
  "dns-rebinding-protection"
]
const nextScenarios = [
  "server-initialize",
  "server-session-lifecycle",
  "server-stateless",
  "ping",
  "tools-list",
  "server-sse-polling",
  "server-sse-multiple-streams",
  "dns-rebinding-protection",
  "caching",
  "http-header-validation",
  "http-custom-header-server-validation"
]
// Scenarios that apply to both eras, also run on the 2026-07-28 wire.
const dualEra = ["tools-list", "server-sse-multiple-streams", "dns-rebinding-protection"]

/**
 * Checks that need the suite's own diagnostic tools (`test_missing_capability`,
 * `test_streaming_elicitation`, `test_logging_tool`), which a real gateway does
 * not list: the suite reports them "Not testable". They are exercised against
 * the MCP layer's fixture catalog, which does list them; see the README.
 */
export const NOT_EXERCISED_ON_A_GATEWAY = [
  "sep-2575-server-rejects-undeclared-capability",
  "sep-2575-missing-capability-http-400",
  "sep-2575-http-server-no-independent-requests-on-stream",
  "sep-2575-server-no-log-without-loglevel"
]

/**
 * server-sse-polling calls the suite's `test_reconnection` diagnostic tool; a
 * gateway does not list it, so its disconnect-and-resume check cannot run
 * there (it is exercised against the MCP layer's fixture catalog). What the
 * scenario records depends on timing: the unknown tool's error is answered as
 * JSON when it comes within `streamAfter` (no verdict at all), or on an SSE
 * stream when a loaded machine makes it later (then the priming event and
 * `retry` field are checked). Either way nothing may FAIL; only the demand for
 * at least one check is waived.
 */
export const SCENARIOS_WITHOUT_CHECKS_ON_A_GATEWAY = ["server-sse-polling"]

const scenariosPass = (notExercised: ReadonlyArray<string>, withoutChecks: ReadonlyArray<string> = []) =>
(it: {
  readonly effect: (name: string, f: () => Effect.Effect<void, never, any>, options: { timeout: number }) => void
}) =>
  it.effect("reports no FAILURE in the required server scenarios", () =>
    Effect.gen(function*() {
      const url = yield* mcpUrl
      const runs = yield* Effect.all(
        [
          ...stableScenarios.map((scenario) => run("0.1.16", STABLE, url, scenario)),
          ...nextScenarios.map((scenario) => run("0.2.0-alpha.12", NEXT, url, scenario)),
          ...dualEra.map((scenario) => run("0.2.0-alpha.12", NEXT, url, scenario, "2026-07-28"))
        ],
        { concurrency: 4 }
      )
      console.log(runs.map(summarize).join("\n"))
      for (const result of runs) {
        if (!withoutChecks.includes(result.scenario)) {
          assert.isAbove(result.checks.length, 0, `${summarize(result)}\n${result.output}`)
        }
        const failures = result.checks.filter((check) =>
          check.status === "FAILURE" &&
          !(notExercised.includes(check.id) && check.errorMessage?.startsWith("Not testable"))
        )
        assert.deepStrictEqual(
          failures.map((check) => `${check.id}: ${check.errorMessage}`),
          [],
          summarize(result)
        )
      }
    }), { timeout: 180_000 })

layer(serverLayer({ pageSize: 100, pollAfter: "100 millis" }), { excludeTestServices: true })(
  "conformance of the MCP layer",
  scenariosPass([])
)

// The whole gateway (storage, REST catalog, guard, egress) with endpoints seeded from a real downstream.
layer(
  Layer.effectDiscard(seedPets).pipe(
    Layer.provideMerge(GatewayTesting.layer({ mcp: { pageSize: 100, pollAfter: "100 millis" } })),
    Layer.provideMerge(Downstream.layer)
  ),
  { excludeTestServices: true, timeout: 60_000 }
)("conformance of a Janus instance", scenariosPass(NOT_EXERCISED_ON_A_GATEWAY, SCENARIOS_WITHOUT_CHECKS_ON_A_GATEWAY))
