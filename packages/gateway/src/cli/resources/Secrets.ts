/**
 * `janus secret set`: the secrets connections reference by name.
 *
 * **Rules**
 *
 * - The value is read from stdin or `--value-file`, never from an argument
 *   (it would land in the shell history), and is never echoed: output names
 *   the secret and its version only.
 * - One trailing newline (from `echo` or an editor) is not part of the value;
 *   an empty value is refused.
 * - `--json` prints `{ name, version }` on stdout.
 *
 * @since 0.1.0
 */
import { Secrets } from "@janus/storage"
import { Console, Effect, Option, Redacted } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as Fs from "node:fs/promises"
import { CliFailure, handled, json, printJson, readStdin } from "../Support.ts"
import { fail, optional, stored } from "./Resource.ts"

const secretSet = Command.make("set", {
  name: Argument.String("name").pipe(Argument.withDescription("Secret name (letters, digits, _ . -)")),
  valueFile: optional(Flag.String("value-file"), "Read the value from this file (default: stdin)"),
  json
}, (input) =>
  handled(Effect.gen(function*() {
    const raw = Option.isSome(input.valueFile)
      ? yield* Effect.tryPromise({
        try: () => Fs.readFile(input.valueFile.pipe(Option.getOrThrow), "utf8"),
        catch: (e) =>
          new CliFailure({
            message: `cannot read --value-file: ${(e as NodeJS.ErrnoException).code ?? "error"}`,
            fix: "check the path and its permissions"
          })
      })
      : yield* readStdin("use --value-file")
    // One trailing newline (from `echo` or an editor) is not part of the value.
    const value = raw?.replace(/\r?\n$/, "")
    if (value === undefined || value === "") {
      return yield* fail(
        `no value for secret ${input.name}`,
        `pipe it on stdin (\`printf %s "$VALUE" | janus secret set ${input.name}\`) or use --value-file PATH`
      )
    }
    return yield* stored(Effect.gen(function*() {
      const info = yield* (yield* Secrets).set(input.name, Redacted.make(value))
      if (input.json) return yield* printJson({ name: info.name, version: Number(info.version) })
      yield* Console.log(`Secret ${info.name} set (version ${Number(info.version)}); its value is not shown`)
    }))
  }))).pipe(Command.withDescription("Set a secret (value from stdin or --value-file; never echoed)"))

export const secret = Command.make("secret").pipe(
  Command.withDescription("Secrets referenced by connections: set"),
  Command.withSubcommands([secretSet])
)
