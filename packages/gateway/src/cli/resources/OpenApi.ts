/**
 * `janus openapi import`: an OpenAPI 3.0/3.1 document (a file or an http(s)
 * URL) becomes one rest connection and one endpoint per operation (see
 * `openapi/Importer.ts`).
 *
 * **Rules**
 *
 * - The plan (operations to add, change, remove, and those skipped with the
 *   reason) is printed on stderr before anything is written; `--dry-run`
 *   writes nothing.
 * - A URL is fetched under the egress policy: private and loopback addresses
 *   are refused, and the fix says to import a downloaded file instead.
 * - `--base-url` overrides the document's servers and is checked as an
 *   http(s) URL first.
 * - `--json` prints the summary on stdout.
 *
 * @since 0.1.0
 */
import { Console, Effect, Layer, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as Fs from "node:fs/promises"
import * as Egress from "../../egress/index.ts"
import { OpenApiImporter } from "../../openapi/index.ts"
import { CliFailure, handled, json, printJson, progress } from "../Support.ts"
import { checkHttpUrl, optional, stored } from "./Resource.ts"

const openapiImport = Command.make("import", {
  source: Argument.String("file-or-url").pipe(Argument.withDescription("OpenAPI 3.0/3.1 document: a path or URL")),
  connection: Flag.String("connection").pipe(Flag.withDescription("Rest connection to create or update")),
  baseUrl: optional(Flag.String("base-url"), "Override the document's servers"),
  prefix: optional(Flag.String("prefix"), "Put in front of every endpoint name"),
  dryRun: Flag.Boolean("dry-run").pipe(
    Flag.withDescription("Show what would change; write nothing"),
    Flag.withDefault(false)
  ),
  json
}, (input) =>
  handled(Effect.gen(function*() {
    if (Option.isSome(input.baseUrl)) yield* checkHttpUrl("--base-url", input.baseUrl.value)
    const isUrl = /^https?:\/\//i.test(input.source)
    yield* progress(`reading ${input.source}…`)
    const source = isUrl ? { url: input.source } : {
      text: yield* Effect.tryPromise({
        try: () => Fs.readFile(input.source, "utf8"),
        catch: (e) =>
          new CliFailure({
            message: `cannot read ${input.source}: ${(e as Error).message}`,
            fix: "check the path (or give an http(s) URL)"
          })
      })
    }
    return yield* stored(
      Effect.gen(function*() {
        const importer = yield* OpenApiImporter
        const request = {
          source,
          connection: { name: input.connection },
          options: {
            baseUrl: Option.getOrUndefined(input.baseUrl),
            namePrefix: Option.getOrUndefined(input.prefix)
          }
        }
        const preview = yield* importer.preview(request).pipe(
          Effect.mapError((error) =>
            error._tag === "OpenApiError" && error.message.startsWith("the document could not be fetched")
              ? new CliFailure({
                message: error.message,
                fix: "check the URL; private and loopback addresses are refused by the egress policy, " +
                  "so download the document and import the file instead"
              })
              : error
          )
        )
        const { diff, plan } = preview
        yield* progress(
          `planned ${plan.endpoints.length} operations (${plan.skipped.length} skipped): ` +
            `${diff.added.length} to add, ${diff.changed.length} to change, ${diff.removed.length} to remove`
        )
        for (const w of plan.warnings) yield* progress(`warning: ${w}`)
        for (const s of plan.skipped) yield* progress(`skipped ${s.method.toUpperCase()} ${s.path}: ${s.reason}`)
        if (!input.dryRun) {
          yield* progress("writing…")
          yield* importer.apply(request)
        }
        const summary = {
          dryRun: input.dryRun,
          connection: preview.connection.name,
          baseUrl: preview.connection.baseUrl,
          added: diff.added.map((e) => e.name),
          changed: diff.changed.map((e) => e.name),
          removed: diff.removed.map((e) => e.name),
          skipped: plan.skipped
        }
        if (input.json) return yield* printJson(summary)
        yield* Console.log(
          `${
            input.dryRun ? "Would import" : "Imported"
          } ${plan.endpoints.length} endpoints into ${summary.connection} ` +
            `(${summary.baseUrl}): ${summary.added.length} added, ${summary.changed.length} changed, ` +
            `${summary.removed.length} removed`
        )
      }).pipe(
        Effect.provide(OpenApiImporter.layer.pipe(Layer.provide(Egress.layerMemory({}))))
      )
    )
  }))).pipe(Command.withDescription("Import an OpenAPI document as a rest connection and its endpoints"))

export const openapi = Command.make("openapi").pipe(
  Command.withDescription("OpenAPI import"),
  Command.withSubcommands([openapiImport])
)
