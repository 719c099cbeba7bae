/**
 * The arguments of a REST tool call are the caller's: validated against the
 * tool's input schema (draft 2020-12 or draft-07, as the schema declares)
 * before anything is sent, never forwarded beyond what the schema declares,
 * and a caller's mistake (a value HTTP cannot carry) is answered as invalid
 * arguments, never counted against the connection's circuit breaker. A tool
 * that declares an output schema returns conforming `structuredContent` or an
 * error. Through the whole gateway, with the official SDK clients and raw
 * HTTP where a client cannot send the value (1e400).
 */
import { assert, layer } from "@effect/vitest"
import { AuditLog } from "@janus/storage"
import { Effect, Layer } from "effect"
import * as GatewayTesting from "../src/testing.ts"
import { meta, post, STATELESS } from "./mcp/http-client.ts"
import * as Downstream from "./support/Downstream.ts"
import { mcpUrl, v1 as connectV1, v2 as connectV2 } from "./support/SdkClients.ts"

const seed = Effect.gen(function*() {
  // two failures open the circuit: a caller's mistakes must never get there
  yield* Downstream.petsTools({ breaker: { consecutiveFailures: 2, openMs: 60_000 } }, [
    {
      name: "get_pet",
      method: "GET",
      pathTemplate: "/pets/{id}",
      arguments: { id: "path", tag: "query", "x-note": "header" },
      inputSchema: {
        type: "object",
        properties: {
          id: { type: "integer", minimum: 1 },
          tag: { type: "string", enum: ["good", "bad"] },
          "x-note": { type: "string" }
        },
        required: ["id"],
        additionalProperties: false
      },
      outputSchema: {
        type: "object",
        properties: { id: { type: "string" }, name: { type: "string" } },
        required: ["id", "name"]
      }
    },
    {
      name: "create_pet",
      method: "POST",
      pathTemplate: "/pets",
      arguments: { name: "body", role: "body" },
      inputSchema: {
        type: "object",
        properties: { name: { type: "string", maxLength: 10 }, role: { type: "string" } },
        required: ["name"]
      }
    },
    // untyped arguments: what the schema does not judge, the request still cannot carry
    Downstream.anyPet,
    {
      name: "pair_07",
      method: "POST",
      pathTemplate: "/pets",
      arguments: { pair: "body" },
      inputSchema: {
        $schema: "http://json-schema.org/draft-07/schema#",
        type: "object",
        properties: { pair: { type: "array", items: [{ type: "string" }, { type: "integer" }] } }
      }
    },
    {
      name: "pair_2020",
      method: "POST",
      pathTemplate: "/pets",
      arguments: { pair: "body" },
      inputSchema: {
        $schema: "https://json-schema.org/draft/2020-12/schema",
        type: "object",
        properties: { pair: { type: "array", prefixItems: [{ type: "string" }, { type: "integer" }] } }
      }
    },
    {
      name: "aged_pet",
      method: "GET",
      pathTemplate: "/pets/{id}",
      arguments: { id: "path" },
      inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
      outputSchema: { type: "object", properties: { age: { type: "integer" } }, required: ["age"] }
    },
    {
      name: "text_typed",
      method: "GET",
      pathTemplate: "/text",
      inputSchema: { type: "object", properties: {} },
      outputSchema: { type: "object" }
    }
  ])
})

const TestLayer = Layer.effectDiscard(seed).pipe(
  Layer.provideMerge(GatewayTesting.layer()),
  Layer.provideMerge(Downstream.layer)
)

const textOf = (result: object): string => (result as { content: Array<{ text: string }> }).content[0]!.text

/** A 2026-07-28 tools/call whose body is `argumentsJson` as written: JSON.stringify cannot write 1e400. */
const rawCall = (name: string, argumentsJson: string) =>
  Effect.flatMap(mcpUrl, (url) =>
    post(
      url.href,
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":${
        JSON.stringify(name)
      },"arguments":${argumentsJson},"_meta":${JSON.stringify(meta())}}}`,
      { "mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": name }
    ))

layer(TestLayer, { timeout: 60_000, excludeTestServices: true })("tool arguments", (it) => {
  it.effect("arguments that do not fit the input schema: an isError result naming each argument, nothing sent", () =>
    Effect.scoped(Effect.gen(function*() {
      const downstream = yield* Downstream.Downstream
      const v1 = yield* connectV1
      const wrong = yield* Effect.promise(() =>
        v1.callTool({ name: "get_pet", arguments: { id: "abc", tag: "evil", isAdmin: true } })
      )
      assert.isTrue(wrong.isError)
      assert.isUndefined(wrong.structuredContent)
      const text = textOf(wrong)
      assert.include(text, "Invalid arguments for tool 'get_pet'")
      assert.include(text, "arguments.id must be integer; got the string \"abc\"")
      assert.include(text, "arguments.tag must be one of \"good\", \"bad\"; got the string \"evil\"")
      assert.include(text, "arguments.isAdmin is not an argument of this tool (it takes id, tag, x-note)")

      const missing = yield* Effect.promise(() => v1.callTool({ name: "get_pet", arguments: {} }))
      assert.isTrue(missing.isError)
      assert.include(textOf(missing), "arguments.id is required")
      const small = yield* Effect.promise(() => v1.callTool({ name: "get_pet", arguments: { id: 0 } }))
      assert.include(textOf(small), "arguments.id must be >= 1; got the number 0")

      // the same answer on 2026-07-28
      const v2 = yield* connectV2
      const long = yield* Effect.promise(() => v2.callTool({ name: "create_pet", arguments: { name: "x".repeat(11) } }))
      assert.isTrue(long.isError)
      assert.include(textOf(long), "arguments.name must be at most 10 characters long; got 11 characters")

      assert.isUndefined(downstream.hits.get("GET /pets/abc"))
      assert.isUndefined(downstream.hits.get("GET /pets/0"))
      assert.isUndefined(downstream.hits.get("GET /pets/undefined"))
      assert.isUndefined(downstream.hits.get("POST /pets"))

      // a valid call goes through, and its structured result conforms to the output schema
      const ok = yield* Effect.promise(() => v1.callTool({ name: "get_pet", arguments: { id: 7, tag: "good" } }))
      assert.isUndefined(ok.isError)
      assert.deepStrictEqual(ok.structuredContent, { id: "7", name: "Rex", tag: "good" })
    })))

  it.effect("arguments the schema does not declare are never forwarded", () =>
    Effect.scoped(Effect.gen(function*() {
      const v2 = yield* connectV2
      const result = yield* Effect.promise(() =>
        v2.callTool({ name: "create_pet", arguments: { name: "Tom", role: "user", isAdmin: true } })
      )
      assert.isUndefined(result.isError)
      assert.deepStrictEqual(result.structuredContent, { created: { name: "Tom", role: "user" } })
      const downstream = yield* Downstream.Downstream
      const queried = yield* Effect.promise(() =>
        v2.callTool({ name: "any_pet", arguments: { id: "5", q: "x", admin: "yes" } })
      )
      assert.isUndefined(queried.isError)
      assert.isUndefined(downstream.lastHeaders["admin"])
    })))

  it.effect("1e400 never becomes Infinity: refused where the schema types it and where it does not", () =>
    Effect.gen(function*() {
      const downstream = yield* Downstream.Downstream
      const typed = yield* rawCall("get_pet", `{"id":1e400}`)
      assert.strictEqual(typed.status, 200)
      assert.isTrue(typed.body.result.isError)
      assert.include(
        typed.body.result.content[0].text,
        "arguments.id must be integer; got a number too large to represent"
      )
      const untyped = yield* rawCall("any_pet", `{"id":1e400}`)
      assert.isTrue(untyped.body.result.isError)
      assert.include(untyped.body.result.content[0].text, "arguments.id is a number too large to represent")
      assert.include(untyped.body.result.content[0].text, "expected a finite number")
      const nested = yield* rawCall("any_pet", `{"id":"1","q":{"deep":[1,-1e999]}}`)
      assert.isTrue(nested.body.result.isError)
      assert.include(nested.body.result.content[0].text, "arguments.q.deep[1] is a number too large to represent")
      assert.isUndefined(downstream.hits.get("GET /pets/Infinity"))
      assert.isUndefined(downstream.hits.get("GET /pets/null"))
    }))

  it.effect("the schema's own draft decides: draft-07 `items` tuples and 2020-12 `prefixItems`", () =>
    Effect.scoped(Effect.gen(function*() {
      const v1 = yield* connectV1
      for (const name of ["pair_07", "pair_2020"]) {
        const wrong = yield* Effect.promise(() => v1.callTool({ name, arguments: { pair: ["a", "b"] } }))
        assert.isTrue(wrong.isError, name)
        assert.include(textOf(wrong), "arguments.pair[1] must be integer; got the string \"b\"", name)
        const right = yield* Effect.promise(() => v1.callTool({ name, arguments: { pair: ["a", 1] } }))
        assert.isUndefined(right.isError, name)
        assert.deepStrictEqual(right.structuredContent, { created: { pair: ["a", 1] } }, name)
      }
    })))

  it.effect("a declared output schema is listed, and a result that does not conform is an error", () =>
    Effect.scoped(Effect.gen(function*() {
      const v1 = yield* connectV1
      const listed = yield* Effect.promise(() => v1.listTools())
      assert.deepStrictEqual(listed.tools.find((t) => t.name === "get_pet")!.outputSchema, {
        type: "object",
        properties: { id: { type: "string" }, name: { type: "string" } },
        required: ["id", "name"]
      })
      assert.isUndefined(listed.tools.find((t) => t.name === "create_pet")!.outputSchema)
      const aged = yield* Effect.promise(() => v1.callTool({ name: "aged_pet", arguments: { id: "3" } }))
      assert.isTrue(aged.isError)
      assert.isUndefined(aged.structuredContent)
      assert.include(textOf(aged), "does not conform to the tool's outputSchema")
      assert.include(textOf(aged), "structuredContent.age is required")
      const text = yield* Effect.promise(() => v1.callTool({ name: "text_typed", arguments: {} }))
      assert.isTrue(text.isError)
      assert.include(textOf(text), "no structured content")
    })))

  it.effect("a value no HTTP header can carry is the caller's error; it never opens the circuit", () =>
    Effect.scoped(Effect.gen(function*() {
      const downstream = yield* Downstream.Downstream
      const v1 = yield* connectV1
      const before = downstream.hits.get("GET /pets/9") ?? 0
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["\u{1F600}", "U+1F600"],
        ["a\u2028b", "U+2028 (line separator)"],
        ["a\u0000b", "U+0000 (NUL)"],
        ["\u{1F600}", "U+1F600"],
        ["x\r\nInjected: 1", "U+000D (carriage return)"]
      ]
      for (const tool of ["get_pet", "any_pet"]) {
        for (const [note, named] of cases) {
          const result = yield* Effect.promise(() =>
            v1.callTool({ name: tool, arguments: { id: tool === "get_pet" ? 9 : "9", "x-note": note } })
          )
          assert.isTrue(result.isError, `${tool} ${named}`)
          const text = textOf(result)
          assert.include(text, `arguments["x-note"] holds ${named}`, tool)
          assert.include(text, "which an HTTP header cannot carry", tool)
          assert.notInclude(text, "line break")
          assert.notInclude(text, "unavailable")
        }
      }
      // a lone surrogate cannot go into a URL either
      const surrogate = yield* Effect.promise(() => v1.callTool({ name: "any_pet", arguments: { id: "a\ud800" } }))
      assert.isTrue(surrogate.isError)
      assert.include(textOf(surrogate), "arguments.id holds U+D800 (a lone surrogate), which a URL cannot carry")
      assert.strictEqual(downstream.hits.get("GET /pets/9") ?? 0, before, "nothing was sent")

      // ten mistakes against a threshold of two: the circuit is closed for every caller
      const fine = yield* Effect.promise(() => v1.callTool({ name: "get_pet", arguments: { id: 9, "x-note": "ok" } }))
      assert.isUndefined(fine.isError)
      assert.strictEqual(downstream.lastHeaders["x-note"], "ok")
    })))

  it.effect("every refused call is audited with the outcome invalid", () =>
    Effect.scoped(Effect.gen(function*() {
      const v1 = yield* connectV1
      const audit = yield* AuditLog
      yield* audit.flush
      const before = (yield* audit.query({ limit: 1000, outcome: "invalid" })).items.length
      yield* Effect.promise(() => v1.callTool({ name: "get_pet", arguments: { id: "nope" } }))
      yield* Effect.promise(() => v1.callTool({ name: "any_pet", arguments: { id: "1", "x-note": "\u0000" } }))
      yield* Effect.promise(() => v1.callTool({ name: "aged_pet", arguments: { id: "1" } }))
      yield* audit.flush
      const invalid = (yield* audit.query({ limit: 1000, outcome: "invalid" })).items
      assert.strictEqual(invalid.length, before + 2)
      const latest = invalid.slice(0, 2).map((r) => r.tool).sort()
      assert.deepStrictEqual(latest, ["any_pet", "get_pet"])
      // a non-conforming result is the downstream's error, not the caller's
      const errors = (yield* audit.query({ limit: 10, outcome: "error", tool: "aged_pet" })).items
      assert.isAtLeast(errors.length, 1)
    })))
})
