/**
 * AUDIT_RETENTION on a running gateway: every hour (and shortly after start)
 * the whole segments of each audit chain older than the retention are
 * deleted (storage's `AuditChain.prune`; the chains stay verifiable from the
 * retained start).
 *
 * Every replica runs it: a prune is idempotent (two replicas deleting the
 * same segment delete it once), so no leader is needed. A failed prune is
 * logged and tried again at the next hour.
 *
 * @since 0.1.0
 */
import { AuditChain, type MasterKey } from "@janus/storage"
import { Clock, Duration, Effect, Layer } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import { JanusConfig } from "../config/JanusConfig.ts"

export const layer: Layer.Layer<never, never, JanusConfig | SqlClient.SqlClient | MasterKey> = Layer.effectDiscard(
  Effect.gen(function*() {
    const config = yield* JanusConfig
    const retentionMs = Duration.toMillis(config.AUDIT_RETENTION)
    const once = Effect.gen(function*() {
      const cutoff = new Date((yield* Clock.currentTimeMillis) - retentionMs)
      const report = yield* AuditChain.prune(cutoff)
      if (report.deleted > 0) {
        yield* Effect.logInfo(`audit retention: deleted ${report.deleted} records older than ${cutoff.toISOString()}`)
      }
    }).pipe(
      Effect.catch((error) => Effect.logWarning("audit retention: the prune failed; retrying in an hour", error))
    )
    yield* Effect.sleep("1 minute").pipe(
      Effect.andThen(Effect.forever(Effect.andThen(once, Effect.sleep("1 hour")))),
      Effect.forkScoped
    )
  })
)
