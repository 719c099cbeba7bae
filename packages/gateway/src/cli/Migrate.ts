/**
 * `janus migrate`: applies pending migrations on the configured database and
 * names each one it applied.
 *
 * **Rules**
 *
 * - Embedded mode: refused while a server runs on the same address (the
 *   guard of `Support.ts`).
 * - Only the bare SQL client is opened ({@link sqlOnly}: no storage
 *   service); `doctor` reads the schema through the same client.
 *
 * @since 0.1.0
 */
import { Migrations, PgliteClient, PostgresClient } from "@janus/storage"
import { Console, Effect, Layer, Option } from "effect"
import { Command } from "effect/cli"
import type * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import * as Path from "node:path"
import { JanusConfig } from "../config/JanusConfig.ts"
import { describeStorage } from "../GatewayStorage.ts"
import { guardEmbedded, handled, json, printJson } from "./Support.ts"

/** The bare SQL client of the configured database: no migrations, no services. */
export const sqlOnly: Layer.Layer<SqlClient.SqlClient, SqlError, JanusConfig> = Layer.unwrap(Effect.gen(function*() {
  const config = yield* JanusConfig
  return Option.match(config.DATABASE_URL, {
    onNone: (): Layer.Layer<SqlClient.SqlClient, SqlError> =>
      PgliteClient.layer({ dataDir: Path.join(config.JANUS_HOME, "data") }),
    onSome: (url): Layer.Layer<SqlClient.SqlClient, SqlError> =>
      PostgresClient.layer({ url, maxConnections: 2, connectTimeout: "5 seconds" })
  })
}))

export const migrate = Command.make("migrate", { json }, (input) =>
  handled(Effect.gen(function*() {
    yield* guardEmbedded
    const config = yield* JanusConfig
    const applied = yield* Effect.provide(Migrations.run, sqlOnly)
    const list = applied.map(([id, name]) => ({ id, name }))
    if (input.json) {
      return yield* printJson({ database: describeStorage(config), applied: list, latest: Migrations.latestId })
    }
    if (list.length === 0) {
      return yield* Console.log(`Database is up to date (migration ${Migrations.latestId}): ${describeStorage(config)}`)
    }
    yield* Console.log(`Applied ${list.length} migration${list.length === 1 ? "" : "s"} to ${describeStorage(config)}:`)
    for (const m of list) {
      yield* Console.log(`  ${m.id} ${m.name}`)
    }
  }))).pipe(Command.withDescription("Apply pending database migrations"))
