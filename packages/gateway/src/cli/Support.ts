/**
 * What every administrative `janus` command shares: how errors are printed,
 * the exit code, `--json`, and the embedded-mode guard.
 *
 * **Errors.** A command fails with a {@link CliFailure} (what was wrong, how to
 * fix it) or a storage/import error; {@link handled} prints either to stderr
 * as `Error: ...` and `  Fix: ...`, with no stack, and the process exits 1.
 * No error message carries a secret value, a token or a master key: storage
 * errors name fields and sizes, never values.
 *
 * **Embedded-mode guard.** The embedded database (PGlite under
 * `JANUS_HOME/data`) is single-process: a second process writing to the same
 * directory while `janus serve` runs could corrupt it. Before opening it, a
 * command probes `GET http://JANUS_HOST:JANUS_PORT/healthz` (0.0.0.0/:: probed
 * on loopback, 800 ms). When a server answers, the command refuses and tells
 * the operator to stop the server or make the change through its admin API
 * (`/api/v1` with an admin token). With `DATABASE_URL` (Postgres) there is no
 * such restriction: every command works next to running replicas.
 * The probe cannot tell which home a server uses: a server of another home on
 * the same port also stops the command (its message says to set JANUS_PORT).
 *
 * @since 0.1.0
 */
import { Cause, Console, Data, Effect, Option, Runtime } from "effect"
import { Flag } from "effect/cli"
import * as Path from "node:path"
import { JanusConfig } from "../config/JanusConfig.ts"

/** A mistake the operator can fix: what was wrong and how to fix it. */
export class CliFailure extends Data.TaggedError("CliFailure")<{
  readonly message: string
  readonly fix: string
}> {}

/** The failure after it was printed: carries the exit code, and is not logged again. */
export class Reported extends Data.TaggedError("Reported")<{ readonly code: number }> {
  override get [Runtime.errorExitCode](): number {
    return this.code
  }
  override readonly [Runtime.errorReported] = false
}

const fixes: Record<string, string> = {
  DuplicateName: "choose another name, or remove the existing one first",
  NotFound: "check the name or id (the `list` command shows them)",
  UnknownReference: "create what is referenced first, or correct the reference",
  InvalidInput: "correct that value and run the command again",
  InvalidUrl: "give an absolute http(s) URL, e.g. https://api.example.com",
  InvalidToolName: "use letters, digits, '_', '-' or '.' (at most 64 characters)",
  InvalidInputSchema: "give a JSON Schema object with \"type\": \"object\"",
  UndeclaredPathParam: "declare every {param} of the path with --arg NAME=path",
  VersionConflict: "someone changed it meanwhile; run the command again",
  SecretNotFound: "set it with `janus secret set NAME` (value on stdin)",
  SecretDecryptionFailed:
    "the master key does not open this secret: set JANUS_MASTER_KEY_PREVIOUS to the key it was sealed with",
  InvalidMasterKey: "check JANUS_MASTER_KEY (32 bytes, base64: `openssl rand -base64 32`) or JANUS_HOME/master.key",
  OpenApiError: "correct the document (or --base-url) and run the import again",
  InvalidEgressConfig: "correct the allow-list entries",
  StorageError: "check that the database is reachable and migrated: run `janus doctor`",
  StorageUnavailable: "check that the database is reachable: run `janus doctor`",
  SqlError: "check DATABASE_URL (or JANUS_HOME) and that the database is reachable: run `janus doctor`",
  MigrationError: "the database schema could not be migrated: run `janus migrate` and read its error",
  ConfigurationInvalid: "correct the document at the paths above and apply it again (--dry-run checks it)",
  ConfigurationChanged: "run `janus apply` again: it plans from what is stored now",
  ConfigurationSourceError: "check the path given to -f (a file, a directory of .yaml/.json files, or - for stdin)"
}

/** The lines printed for a failure. */
export const render = (error: unknown): string => {
  if (error instanceof CliFailure) return `Error: ${error.message}\n  Fix: ${error.fix}`
  const tag = typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : undefined
  const message = error instanceof Error ? error.message : String(error)
  const fix = (tag && fixes[tag]) ?? "run `janus doctor` to check the configuration and the database"
  return `Error: ${message === "" ? tag ?? "unknown error" : message}\n  Fix: ${fix}`
}

/** Prints any failure (or defect) of `effect` to stderr and exits 1; interruptions pass through. */
export const handled = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Reported, R> =>
  Effect.catchCause(effect, (cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.failCause(cause as Cause.Cause<never>)
      : Console.error(render(Cause.squash(cause))).pipe(Effect.andThen(Effect.fail(new Reported({ code: 1 })))))

/** `--json`: machine-readable output on stdout. */
export const json = Flag.Boolean("json").pipe(
  Flag.withDescription("Print JSON on stdout (for scripts)"),
  Flag.withDefault(false)
)

export const printJson = (value: unknown): Effect.Effect<void> => Console.log(JSON.stringify(value, null, 2))

/** A line for people, on stderr (so `--json` stdout stays parseable). */
export const progress = (line: string): Effect.Effect<void> => Console.error(line)

const probeHost = (host: string): string => {
  const h = host === "0.0.0.0" || host === "" ? "127.0.0.1" : host === "::" ? "::1" : host
  return h.includes(":") ? `[${h}]` : h
}

/** Whether something answers `/healthz` at the configured address. */
export const serverAnswering = (config: JanusConfig["Service"]): Effect.Effect<Option.Option<string>> => {
  const url = `http://${probeHost(config.JANUS_HOST)}:${config.JANUS_PORT}/healthz`
  return Effect.promise(() =>
    fetch(url, { signal: AbortSignal.timeout(800) }).then(
      async (response) => {
        await response.body?.cancel()
        return Option.some(url)
      },
      () => Option.none<string>()
    )
  )
}

/**
 * Refuses to open the embedded database while a server answers on the
 * configured address (see the module doc). No-op with `DATABASE_URL`.
 */
export const guardEmbedded: Effect.Effect<void, CliFailure, JanusConfig> = Effect.gen(function*() {
  const config = yield* JanusConfig
  if (Option.isSome(config.DATABASE_URL)) return
  const running = yield* serverAnswering(config)
  if (Option.isNone(running)) return
  const home = Path.resolve(config.JANUS_HOME)
  return yield* new CliFailure({
    message: `a Janus server answers at ${running.value}, and the embedded database in ${home} ` +
      "is single-process: this command cannot open it while the server runs",
    fix: "stop the server (Ctrl-C or SIGTERM) and run the command again, or make the change through the " +
      "running server's admin API (/api/v1 with an admin token); if that server uses another JANUS_HOME, " +
      "set JANUS_PORT to the port of this home's server"
  })
})

/** All of stdin as text; undefined when stdin is a terminal (nothing was piped). */
export const readStdin = (fix: string) =>
  Effect.tryPromise({
    try: async () => {
      if (process.stdin.isTTY) return undefined
      const chunks: Array<Buffer> = []
      for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
      return Buffer.concat(chunks).toString("utf8")
    },
    catch: (e) => new CliFailure({ message: `cannot read stdin: ${(e as Error).message}`, fix })
  })

/** Splits a comma-separated flag value; empty entries dropped. */
export const splitList = (value: string): Array<string> => value.split(",").map((s) => s.trim()).filter((s) => s !== "")
