/**
 * `janus key rotate`: re-encrypts every secret under a fresh master key
 * (`Secrets.rotate`).
 *
 * **Rules**
 *
 * - Embedded mode: refused while a server runs on the same address (the
 *   guard of `Support.ts`).
 * - With the key file (no `JANUS_MASTER_KEY`): the file is rewritten, new key
 *   first, old keys kept to open old data; no key is printed.
 * - With `JANUS_MASTER_KEY`: the new key is printed once (stdout only) with
 *   how to set `JANUS_MASTER_KEY` and `JANUS_MASTER_KEY_PREVIOUS`; the old
 *   keys are named by their variables, never printed.
 *
 * @since 0.1.0
 */
import { SecretBox, Secrets } from "@janus/storage"
import { Console, Effect, Option } from "effect"
import { Command } from "effect/cli"
import * as Path from "node:path"
import { JanusConfig } from "../config/JanusConfig.ts"
import { asCli, CliStorage } from "./AuditedStorage.ts"
import { guardEmbedded, handled, json, printJson } from "./Support.ts"

const keyRotate = Command.make("rotate", { json }, (input) =>
  handled(Effect.gen(function*() {
    yield* guardEmbedded
    const config = yield* JanusConfig
    const envMode = Option.isSome(config.JANUS_MASTER_KEY)
    const key = SecretBox.generateKey()
    const result = yield* Effect.provide(
      asCli(Effect.flatMap(Effect.service(Secrets), (s) => s.rotate(key))),
      CliStorage
    )
    if (!envMode) {
      const file = Path.resolve(config.JANUS_HOME, "master.key")
      if (input.json) {
        return yield* printJson({
          keyId: result.keyId,
          reencrypted: result.reencrypted,
          auditHeads: result.heads,
          keyFile: file
        })
      }
      yield* Console.log(
        `Rotated the master key: ${result.reencrypted} secret(s) re-encrypted under key ${result.keyId}`
      )
      yield* headsReport(result.heads)
      yield* Console.log(`The key file ${file} now starts with the new key; older keys stay in it to open old data.`)
      return
    }
    const encoded = SecretBox.encodeKey(key)
    const previous = "<the value JANUS_MASTER_KEY has now>" +
      (config.JANUS_MASTER_KEY_PREVIOUS.length > 0 ? ",<the values JANUS_MASTER_KEY_PREVIOUS has now>" : "")
    if (input.json) {
      return yield* printJson({
        keyId: result.keyId,
        reencrypted: result.reencrypted,
        auditHeads: result.heads,
        JANUS_MASTER_KEY: encoded,
        JANUS_MASTER_KEY_PREVIOUS: previous
      })
    }
    yield* Console.log(`Rotated the master key: ${result.reencrypted} secret(s) re-encrypted under key ${result.keyId}`)
    yield* headsReport(result.heads)
    yield* Console.log("")
    yield* Console.log("New master key (shown once; store it in your secret manager now):")
    yield* Console.log(`  ${encoded}`)
    yield* Console.log("")
    yield* Console.log("Now, on every replica, set and restart:")
    yield* Console.log(`  JANUS_MASTER_KEY=${encoded}`)
    yield* Console.log(`  JANUS_MASTER_KEY_PREVIOUS=${previous}`)
    yield* Console.log(
      "Until a replica restarts with the new key it cannot open secrets changed since the rotation " +
        "(values it has cached keep working). Drop the old key from JANUS_MASTER_KEY_PREVIOUS after every replica " +
        "runs with the new one (a replica still on the old key signs its audit chain heads with it until then)."
    )
  }))).pipe(Command.withDescription("Re-encrypt every secret under a new master key"))

/** What rotation did to the audit chains' signed heads (a forged head is not re-signed: it keeps failing verify). */
const headsReport = (
  heads: { readonly resigned: number; readonly unsigned: number; readonly forged: ReadonlyArray<string> }
) =>
  Effect.gen(function*() {
    yield* Console.log(
      `Audit chain heads re-signed under the new key: ${heads.resigned}` +
        (heads.unsigned > 0 ? `; ${heads.unsigned} unsigned (written before signing existed) left unsigned` : "")
    )
    for (const chain of heads.forged) {
      yield* Console.log(
        `WARNING  the head of audit chain ${chain} is not signed by this deployment's key; it was not re-signed ` +
          "(run `janus audit verify`)"
      )
    }
  })

export const key = Command.make("key").pipe(
  Command.withDescription("Master key: rotate"),
  Command.withSubcommands([keyRotate])
)
