/**
 * OpenAPI documents to endpoint plans, without storage: names, argument
 * maps, input schemas, 3.0/3.1 schema translation, `$ref` bounds, skipped
 * operations and the re-import diff.
 */
import { assert, describe, it } from "@effect/vitest"
import { Endpoint, Validation } from "@janus/storage"
import { Effect, Result } from "effect"
import { readFileSync } from "node:fs"
import { boundSchema, load, parseText } from "../../src/openapi/Document.ts"
import { diff, operationName, plan, type PlannedEndpoint } from "../../src/openapi/Plan.ts"

const fixture = (name: string) => readFileSync(new URL(`../fixtures/openapi/${name}`, import.meta.url), "utf8")

const planOf = (text: string, options: Parameters<typeof plan>[1] = {}) =>
  Effect.gen(function*() {
    const document = yield* Effect.flatMap(parseText(text), load)
    const planned = plan(document, options)
    if (Result.isFailure(planned)) return yield* planned.failure
    return planned.success
  })

const reversedKeys = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(reversedKeys)
    : typeof value === "object" && value !== null
    ? Object.fromEntries(
      Object.keys(value).reverse().map((k) => [k, reversedKeys((value as Record<string, unknown>)[k])])
    )
    : value

const byName = (endpoints: ReadonlyArray<PlannedEndpoint>) => Object.fromEntries(endpoints.map((e) => [e.name, e]))

/** The endpoint as storage would accept it. */
const storable = (e: PlannedEndpoint) =>
  Effect.andThen(
    Validation.checkInputSchema(e.name, e.inputSchema as Record<string, unknown>),
    Validation.checkEndpointShape({ ...e, arguments: { ...e.arguments }, inputSchema: e.inputSchema as never })
  )

describe("OpenAPI plan", () => {
  it.effect("Petstore 3.0: one endpoint per operation, parameters and the JSON body as arguments", () =>
    Effect.gen(function*() {
      const planned = yield* planOf(fixture("petstore.yaml"))
      assert.strictEqual(planned.baseUrl, "http://petstore.swagger.io/v1")
      assert.deepStrictEqual(planned.endpoints.map((e) => e.name), ["listPets", "createPets", "showPetById"])
      const e = byName(planned.endpoints)
      assert.deepStrictEqual(e.listPets!.arguments, { limit: "query" })
      assert.deepStrictEqual(e.listPets!.inputSchema, {
        type: "object",
        properties: {
          limit: {
            type: "integer",
            maximum: 100,
            format: "int32",
            description: "How many items to return at one time (max 100)"
          }
        }
      })
      assert.strictEqual(e.listPets!.description, "List all pets")
      // an object body is spread into the arguments
      assert.deepStrictEqual(e.createPets!.arguments, { id: "body", name: "body", tag: "body" })
      assert.deepStrictEqual(e.createPets!.inputSchema.required, ["id", "name"])
      assert.deepStrictEqual(e.showPetById!.arguments, { petId: "path" })
      assert.deepStrictEqual(e.showPetById!.inputSchema.required, ["petId"])
      assert.strictEqual(e.showPetById!.pathTemplate, "/pets/{petId}")
      for (const endpoint of planned.endpoints) yield* storable(endpoint)
    }))

  it.effect("3.1 and 3.0 schemas become JSON Schema 2020-12; circular $refs are cut", () =>
    Effect.gen(function*() {
      const doc = {
        openapi: "3.1.0",
        info: { title: "t", version: "1" },
        servers: [{ url: "https://{region}.example.com/api", variables: { region: { default: "eu" } } }],
        paths: {
          "/trees/{id}": {
            put: {
              parameters: [
                { name: "id", in: "path", required: true, schema: { type: "string" } },
                { name: "session", in: "cookie", schema: { type: "string" } },
                { name: "Authorization", in: "header", schema: { type: "string" } },
                { name: "X-Trace", in: "header", schema: { type: ["string", "null"] } }
              ],
              requestBody: {
                required: true,
                content: { "application/json": { schema: { $ref: "#/components/schemas/Node" } } }
              }
            }
          },
          "/batch": {
            post: {
              operationId: "batch",
              requestBody: {
                content: { "application/json": { schema: { type: "array", items: { type: "integer" } } } }
              }
            }
          },
          "/upload": {
            post: {
              operationId: "upload",
              requestBody: { required: true, content: { "multipart/form-data": { schema: { type: "object" } } } }
            }
          },
          "/x": { get: { operationId: "batch" } }
        },
        components: {
          schemas: {
            Node: {
              type: "object",
              required: ["value"],
              properties: {
                value: { type: "string" },
                children: { type: "array", items: { $ref: "#/components/schemas/Node" } }
              }
            }
          }
        }
      }
      const planned = yield* planOf(JSON.stringify(doc))
      assert.strictEqual(planned.baseUrl, "https://eu.example.com/api")
      const e = byName(planned.endpoints)
      assert.deepStrictEqual(Object.keys(e), ["put_trees_id", "batch", "batch_2"])
      assert.deepStrictEqual(e.put_trees_id!.arguments, {
        id: "path",
        "X-Trace": "header",
        value: "body",
        children: "body"
      })
      const children = (e.put_trees_id!.inputSchema.properties as Record<string, { items: unknown }>).children!
      // Node.children.items is Node itself: the cycle is cut where it closes
      assert.deepStrictEqual(children.items, { description: "(recursive)" })
      assert.deepStrictEqual(e.batch!.arguments, { body: "body" })
      assert.deepStrictEqual(planned.skipped, [{
        method: "POST",
        path: "/upload",
        reason: "the request body is multipart/form-data, not JSON"
      }])
      assert.isTrue(planned.warnings.some((w) => w.includes("cookie parameter session")))
      assert.isTrue(planned.warnings.some((w) => w.includes("header Authorization is set by the gateway")))
      for (const endpoint of planned.endpoints) yield* storable(endpoint)
    }))

  it("translates OpenAPI 3.0 nullable, example and boolean exclusive bounds", () => {
    assert.deepStrictEqual(
      boundSchema({
        type: "integer",
        nullable: true,
        minimum: 1,
        exclusiveMinimum: true,
        example: 3,
        xml: { name: "n" },
        "x-internal": 1
      }, "3.0"),
      { type: ["integer", "null"], exclusiveMinimum: 1, examples: [3] }
    )
  })

  it.effect("refuses Swagger 2.0, unknown versions and YAML alias bombs; ignores external refs", () =>
    Effect.gen(function*() {
      const swagger = yield* Effect.flip(planOf(JSON.stringify({ swagger: "2.0", paths: {} })))
      assert.include(swagger.message, "Swagger 2.0")
      const unknown = yield* Effect.flip(planOf(JSON.stringify({ openapi: "4.0.0", paths: {} })))
      assert.include(unknown.message, "expected 3.0.x or 3.1.x")
      const bomb = ["a: &a [x, x, x, x, x, x, x, x, x]"]
      for (let i = 0; i < 8; i++) {
        bomb.push(`${"bcdefghi"[i]}: &${"bcdefghi"[i]} [${Array(9).fill(`*${"abcdefgh"[i]}`).join(", ")}]`)
      }
      const aliases = yield* Effect.flip(planOf(`openapi: 3.0.0\npaths: {}\n${bomb.join("\n")}\n`))
      assert.include(aliases.message, "YAML")
      const external = yield* planOf(JSON.stringify({
        openapi: "3.0.3",
        servers: [{ url: "https://api.example.com" }],
        paths: {
          "/a": {
            post: {
              operationId: "a",
              requestBody: {
                content: { "application/json": { schema: { $ref: "http://169.254.169.254/latest/meta-data.json" } } }
              }
            }
          }
        }
      }))
      assert.deepStrictEqual(external.endpoints[0]!.arguments, { body: "body" })
    }))

  it("names: operationId sanitised and prefixed, fallback method_path, bounded length", () => {
    assert.strictEqual(operationName("", "get", "/pets/{petId}", undefined), "get_pets_petId")
    assert.strictEqual(operationName("gh_", "get", "/x", "issues/list-for-repo"), "gh_issues_list-for-repo")
    const long = operationName("", "get", "/x", "a".repeat(80))
    assert.strictEqual(long.length, 64)
  })

  it.effect("diffs a re-import by name: added, changed (with the fields), removed, unchanged", () =>
    Effect.gen(function*() {
      const v1 = yield* planOf(fixture("petstore.yaml"))
      const v2 = yield* planOf(fixture("petstore-v2.yaml"))
      const now = new Date(0)
      const existing = v1.endpoints.map((p, i) =>
        new Endpoint({
          id: `id-${i}`,
          connectionId: "c",
          name: p.name,
          description: p.description,
          method: p.method,
          pathTemplate: p.pathTemplate,
          arguments: { ...p.arguments },
          // storage (JSONB) hands keys back in another order: the diff must not care
          inputSchema: reversedKeys(p.inputSchema) as Record<string, unknown>,
          idempotent: p.method === "GET",
          version: 1,
          createdAt: now,
          updatedAt: now
        })
      )
      assert.deepStrictEqual(diff(existing, v1.endpoints).unchanged, ["listPets", "createPets", "showPetById"])
      const changes = diff(existing, v2.endpoints)
      assert.deepStrictEqual(changes.added.map((e) => e.name), ["deletePet"])
      assert.deepStrictEqual(changes.removed.map((e) => e.name), ["createPets"])
      assert.deepStrictEqual(
        changes.changed.map((c) => [c.name, c.fields]),
        [["listPets", ["arguments", "inputSchema"]], ["showPetById", ["description", "inputSchema"]]]
      )
      assert.deepStrictEqual(changes.unchanged, [])
    }))
})
