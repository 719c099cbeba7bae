/**
 * `janus endpoint add`: one REST endpoint of a rest connection, exposed as
 * one MCP tool.
 *
 * **Rules**
 *
 * - The connection must exist and be a rest connection; endpoint names are
 *   unique.
 * - `--arg NAME=LOCATION` places an argument in the path, query, header or
 *   body. `--schema` is a JSON object (text, or `@file.json`); without it the
 *   input schema has one string property per argument, path arguments
 *   required.
 * - `--json` prints machine-readable output on stdout.
 *
 * @since 0.1.0
 */
import { Connections, Endpoints } from "@janus/storage"
import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as Fs from "node:fs/promises"
import { CliFailure, handled, json, printJson } from "../Support.ts"
import { fail, optional, stored } from "./Resource.ts"

const locations = ["path", "query", "header", "body"] as const

const readJsonArgument = (flag: string, raw: string) =>
  Effect.gen(function*() {
    let text = raw
    if (raw.startsWith("@")) {
      const file = raw.slice(1)
      text = yield* Effect.tryPromise({
        try: () => Fs.readFile(file, "utf8"),
        catch: (e) => new CliFailure({ message: `${flag}: cannot read ${file}: ${String(e)}`, fix: "check the path" })
      })
    }
    try {
      const value: unknown = JSON.parse(text)
      if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("not an object")
      return value as Record<string, unknown>
    } catch (e) {
      return yield* fail(`${flag} is not a JSON object (${String(e)})`, `give a JSON Schema object, or @file.json`)
    }
  })

const endpointAdd = Command.make("add", {
  name: Argument.String("name").pipe(Argument.withDescription("Tool name of the endpoint")),
  connection: Flag.String("connection").pipe(Flag.withDescription("The rest connection it belongs to")),
  method: Flag.Literals("method", ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]).pipe(
    Flag.withDescription("HTTP method")
  ),
  path: Flag.String("path").pipe(Flag.withDescription("Path template under the base URL, e.g. /users/{id}")),
  args: Flag.String("arg").pipe(
    Flag.withDescription("An argument and where it goes: NAME=path|query|header|body (repeatable)"),
    Flag.atLeast(0)
  ),
  schema: optional(Flag.String("schema"), "Input JSON Schema (JSON text, or @file.json); default: string arguments"),
  description: Flag.String("description").pipe(Flag.withDefault("")),
  json
}, (input) =>
  handled(Effect.gen(function*() {
    const args: Record<string, (typeof locations)[number]> = {}
    for (const raw of input.args) {
      const [name, location] = raw.split("=", 2)
      if (!name || !location || !(locations as ReadonlyArray<string>).includes(location)) {
        return yield* fail(
          `--arg ${JSON.stringify(raw)} is not NAME=LOCATION`,
          `use --arg NAME=path, NAME=query, NAME=header or NAME=body`
        )
      }
      args[name] = location as (typeof locations)[number]
    }
    const schema = Option.isSome(input.schema)
      ? yield* readJsonArgument("--schema", input.schema.value)
      : {
        type: "object",
        properties: Object.fromEntries(Object.keys(args).map((n) => [n, { type: "string" }])),
        required: Object.entries(args).filter(([, l]) => l === "path").map(([n]) => n)
      }
    return yield* stored(Effect.gen(function*() {
      const found = yield* (yield* Connections).findByName(input.connection)
      if (Option.isNone(found)) {
        return yield* fail(
          `no connection is named ${input.connection}`,
          "see `janus connection list`, or add it with `janus connection add`"
        )
      }
      if (found.value.kind !== "rest") {
        return yield* fail(
          `connection ${input.connection} is an MCP connection`,
          "endpoints belong to rest connections"
        )
      }
      const endpoints = yield* Endpoints
      if (Option.isSome(yield* endpoints.findByName(input.name))) {
        return yield* fail(`an endpoint named ${input.name} already exists`, "choose another name")
      }
      const created = yield* endpoints.create({
        connectionId: found.value.id,
        name: input.name,
        description: input.description,
        method: input.method,
        pathTemplate: input.path,
        arguments: args,
        inputSchema: schema
      })
      if (input.json) {
        return yield* printJson({
          id: created.id,
          name: created.name,
          connection: input.connection,
          method: created.method,
          path: created.pathTemplate,
          arguments: created.arguments,
          inputSchema: created.inputSchema,
          idempotent: created.idempotent
        })
      }
      yield* Console.log(
        `Added endpoint ${created.name}: ${created.method} ${created.pathTemplate} on ${input.connection}`
      )
    }))
  }))).pipe(Command.withDescription("Add a REST endpoint (one MCP tool) to a connection"))

export const endpoint = Command.make("endpoint").pipe(
  Command.withDescription("REST endpoints: add"),
  Command.withSubcommands([endpointAdd])
)
