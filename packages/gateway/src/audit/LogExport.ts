/**
 * Audit rows as OTLP log records, so an SRE's log pipeline receives them:
 * when OTLP logs are exported (an endpoint for the logs signal and
 * OTEL_LOGS_EXPORTER=otlp), every record the audit log takes is also logged
 * once, at info, as `audit record` with the row's fields as attributes
 * (`audit.kind`, `audit.identity`, `audit.outcome`, ...; no body, no
 * credential: the row holds none). The OTLP logger installed by
 * `observability/Otlp` exports it (as it does every log line; stdout gets it
 * too). Without OTLP logs nothing is added to the hot path.
 *
 * @since 0.1.0
 */
import { type AuditInput, AuditLog } from "@janus/storage"
import { Effect, Layer, Option } from "effect"
import { JanusConfig } from "../config/JanusConfig.ts"
import * as Otlp from "../observability/Otlp.ts"

/** The attributes of `input`'s log record: every field set, as `audit.<field>`. */
export const attributesOf = (input: AuditInput): Record<string, unknown> => {
  const attributes: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(input)) {
    if (value === null || value === undefined) continue
    attributes[`audit.${key}`] = value instanceof Date ? value.toISOString() : value
  }
  return attributes
}

/** `AuditLog` that also logs each record when OTLP logs are on (see the module doc); as is otherwise. */
export const layer: Layer.Layer<AuditLog, never, AuditLog | JanusConfig> = Layer.effect(
  AuditLog,
  Effect.gen(function*() {
    const inner = yield* AuditLog
    const config = yield* JanusConfig
    const logsOn = Option.match(Otlp.settingsOf(config, "audit"), {
      onNone: () => false,
      onSome: (settings) => settings.logs !== undefined
    })
    if (!logsOn) return inner
    return AuditLog.of({
      ...inner,
      record: (input) =>
        Effect.andThen(
          inner.record(input),
          Effect.logInfo("audit record").pipe(Effect.annotateLogs(attributesOf(input)))
        )
    })
  })
)
