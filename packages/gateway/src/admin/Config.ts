/**
 * `GET /api/v1/config`: the effective configuration, for Studio's settings
 * page.
 *
 * **Rules**
 *
 * - Every variable of `JanusConfig` is listed with the value in force
 *   (defaults included), so an operator sees what the process runs with.
 * - A secret variable (`JANUS_MASTER_KEY`, `DATABASE_URL`, `REDIS_URL`, ...)
 *   is never shown: only whether it is set.
 * - The OpenTelemetry variables (`Otlp.VARIABLES`) follow, as the process
 *   reads them (null: unset); `OTEL_EXPORTER_OTLP_HEADERS` is secret, and
 *   credentials in the endpoint URL are masked.
 *
 * @since 0.1.0
 */
import { Config, Duration, Effect, Layer, Option, Redacted } from "effect"
import { HttpServerResponse } from "effect/http"
import { JanusConfig, VARIABLES } from "../config/JanusConfig.ts"
import * as Otlp from "../observability/Otlp.ts"
import { AdminRouter } from "./AdminRouter.ts"

/** A setting as shown: secrets masked, options unwrapped, durations and lists readable. */
export const display = (value: unknown, secret: boolean): string | number | boolean | null => {
  if (Option.isOption(value)) return Option.isNone(value) ? null : display(value.value, secret)
  if (secret) return Array.isArray(value) && value.length === 0 ? null : "(set, hidden)"
  if (Redacted.isRedacted(value)) return "(set, hidden)"
  if (Duration.isDuration(value)) return Duration.format(value)
  if (Array.isArray(value)) return value.map((v) => String(v)).join(", ")
  if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") return value
  return String(value)
}

/** A URL with its user info masked (an endpoint may carry credentials). */
const maskUserInfo = (value: string): string => {
  if (!URL.canParse(value)) return value
  const url = new URL(value)
  if (url.username === "" && url.password === "") return value
  url.username = "hidden"
  url.password = ""
  return url.href
}

/** The OpenTelemetry variables as shown; an unreadable one is shown unset, as the exporter would not start. */
export const otelSettings: Effect.Effect<Record<string, string | number | boolean | null>> = Effect.map(
  Effect.forEach(Otlp.VARIABLES, ({ name, secret }) =>
    Effect.gen(function*() {
      const value = yield* Config.option(Config.String(name))
      const shown = Option.map(value, (v) => name === "OTEL_EXPORTER_OTLP_ENDPOINT" ? maskUserInfo(v) : v)
      return [name, display(shown, secret)] as const
    }).pipe(Effect.orElseSucceed(() => [name, null] as const))),
  Object.fromEntries
)

export const ConfigRoutes: Layer.Layer<never, never, AdminRouter | JanusConfig> = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* AdminRouter
    const config = yield* JanusConfig
    const settings = {
      ...Object.fromEntries(
        Object.entries(VARIABLES).map(([name, variable]) => [
          name,
          display(config[name as keyof typeof VARIABLES], variable.secret === true)
        ])
      ),
      ...(yield* otelSettings)
    }
    yield* router.add("GET", "/config", Effect.succeed(HttpServerResponse.jsonUnsafe({ settings })))
  })
)
