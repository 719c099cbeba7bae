/**
 * `janus export` and `janus apply`: the configuration as a document, written
 * from and applied to the database through the same storage as `serve`
 * (embedded mode: refused while a server runs, as every command that writes).
 *
 * - `export [--format yaml|json] [--output FILE]` writes the document to
 *   stdout (or FILE); nothing else goes to stdout.
 * - `apply -f FILE|DIR|- [--dry-run] [--prune] [--json]
 *   [--detailed-exit-code]` reads the document, plans it against the
 *   database (a dry run that carries out and rolls back every write, so
 *   every refusal is found) and prints the plan as a diff; `--dry-run` stops
 *   there; otherwise it applies that plan in one transaction, with the basis
 *   it planned from (a change made meanwhile fails it, changing nothing).
 *   `--prune` removes what the document does not name; without it removals
 *   are only listed. `valueFrom.env` is read from this command's environment.
 *   A token the document adds without `valueFrom` gets a new value, printed
 *   once (like `janus token create`). `--detailed-exit-code` exits 2 when the
 *   plan has changes (drift detection in CI).
 *
 * @since 0.1.0
 */
import { Console, Effect, Layer, Option, Redacted } from "effect"
import { Command, Flag } from "effect/cli"
import * as Fs from "node:fs/promises"
import { type ApplyResult, ConfigurationApplier } from "../configuration/Applier.ts"
import type { ConfigurationInvalid } from "../configuration/Document.ts"
import { fromTexts, load, type Loaded } from "../configuration/Sources.ts"
import * as Text from "../configuration/Text.ts"
import { asCli, CliStorage } from "./AuditedStorage.ts"
import { CliFailure, guardEmbedded, handled, json, printJson, progress, readStdin, Reported } from "./Support.ts"

/** Runs `body` with the applier on the configured storage, after the embedded-mode guard. */
const withApplier = <A, E, R>(body: Effect.Effect<A, E, R>) =>
  guardEmbedded.pipe(
    Effect.andThen(Effect.provide(asCli(body), ConfigurationApplier.layer.pipe(Layer.provideMerge(CliStorage))))
  )

const exportCommand = Command.make("export", {
  format: Flag.Literals("format", ["yaml", "json"]).pipe(
    Flag.withDescription("yaml (default) or json"),
    Flag.withDefault("yaml" as const)
  ),
  output: Flag.String("output").pipe(
    Flag.withAlias("o"),
    Flag.withDescription("Write to this file instead of stdout"),
    Flag.optional
  )
}, (input) =>
  handled(withApplier(Effect.gen(function*() {
    const exported = yield* ConfigurationApplier.use((applier) => applier.export)
    const text = yield* Text.write(exported.document, input.format)
    if (Option.isNone(input.output)) return yield* Effect.sync(() => process.stdout.write(text))
    yield* Effect.tryPromise({
      try: () => Fs.writeFile(input.output.pipe(Option.getOrThrow), text, "utf8"),
      catch: (e) =>
        new CliFailure({
          message: `cannot write ${Option.getOrThrow(input.output)}: ${(e as NodeJS.ErrnoException).code ?? "error"}`,
          fix: "check the path and its permissions"
        })
    })
    yield* progress(`Wrote the configuration to ${Option.getOrThrow(input.output)}`)
  })))).pipe(
    Command.withDescription("Write the configuration (no secret or token values) as a YAML or JSON document")
  )

const fromStdin: Effect.Effect<Loaded, CliFailure | ConfigurationInvalid> = Effect.flatMap(
  readStdin("give the document with -f FILE"),
  (text): Effect.Effect<Loaded, CliFailure | ConfigurationInvalid> =>
    text === undefined
      ? Effect.fail(
        new CliFailure({ message: "-f - reads the document from stdin, but nothing was piped", fix: "pipe it in" })
      )
      : fromTexts([["stdin", text]])
)

/** What `--json` prints: the plan, and token values only when they were just issued. */
const asJson = (result: ApplyResult) => ({
  dryRun: !result.applied,
  applied: result.applied,
  basis: result.basis,
  plan: result.plan,
  issuedTokens: result.issuedTokens.map((t) => ({ name: t.name, token: Redacted.value(t.token) }))
})

const applyCommand = Command.make("apply", {
  file: Flag.String("file").pipe(
    Flag.withAlias("f"),
    Flag.withDescription("The document: a file, a directory of .yaml/.yml/.json files, or - for stdin")
  ),
  dryRun: Flag.Boolean("dry-run").pipe(
    Flag.withDescription("Print the plan (every write checked and rolled back); apply nothing"),
    Flag.withDefault(false)
  ),
  prune: Flag.Boolean("prune").pipe(
    Flag.withDescription("Remove what the document does not name (otherwise removals are only listed)"),
    Flag.withDefault(false)
  ),
  detailedExitCode: Flag.Boolean("detailed-exit-code").pipe(
    Flag.withDescription("Exit 2 when the plan has changes (0: none), e.g. to detect drift in CI"),
    Flag.withDefault(false)
  ),
  json
}, (input) =>
  handled(Effect.gen(function*() {
    const loaded: Loaded = input.file === "-" ? yield* fromStdin : yield* load(input.file)
    const options = {
      prune: input.prune,
      environment: "read",
      issueTokens: true,
      origin: "cli"
    } as const
    const result = yield* withApplier(Effect.gen(function*() {
      const applier = yield* ConfigurationApplier
      const plan = yield* applier.apply(loaded.configuration, { ...options, dryRun: true })
      const pending = plan.plan.changes.filter((c) => c.action !== "remove" || input.prune)
      if (!input.json) { for (const line of Text.plan(plan.plan)) yield* Console.log(line) }
      if (input.dryRun || pending.length === 0) {
        if (!input.json) {
          yield* Console.log(
            pending.length === 0 ? "Nothing to apply: the database matches the document." : "Dry run: nothing applied."
          )
        }
        return plan
      }
      // the plan just shown, or nothing: the apply fails if anything changed since it was made
      const applied = yield* applier.apply(loaded.configuration, { ...options, dryRun: false, basis: plan.basis })
      if (!input.json) {
        yield* Console.log(`Applied: ${Text.summary(applied.plan)}.`)
        for (const issued of applied.issuedTokens) {
          yield* Console.log(`Client token ${issued.name} (shown once; store it now, it cannot be shown again):`)
          yield* Console.log(`  ${Redacted.value(issued.token)}`)
        }
      }
      return applied
    }))
    if (input.json) yield* printJson(asJson(result))
    return result.plan.changes.some((c) => c.action !== "remove" || input.prune)
  })).pipe(
    Effect.flatMap((changed) =>
      input.detailedExitCode && changed ? Effect.fail(new Reported({ code: 2 })) : Effect.void
    )
  )).pipe(
    Command.withDescription(
      "Apply a configuration document: print the plan as a diff, then apply it in one transaction " +
        "(--dry-run: only the plan; --prune: also remove what the document does not name)"
    )
  )

export { applyCommand as apply, exportCommand as export_ }
