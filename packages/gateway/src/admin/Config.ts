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
 * - The OpenTelemetry variables are rows of `JanusConfig` too
 *   (`config/OtelVariables.ts`): the `*_HEADERS` ones are secret, and
 *   credentials in an endpoint URL are masked.
 * - `variables` lists the same, each with its meaning and its source:
 *   `environment` (set when the process started), `default`, or `key file`
 *   (`JANUS_MASTER_KEY` unset in the embedded mode: JANUS_HOME/master.key).
 *
 * @since 0.1.0
 */
import { Config, Duration, Effect, Layer, Option, Redacted } from "effect"
import { HttpServerResponse } from "effect/http"
import { JanusConfig, type JanusSettings, VARIABLES } from "../config/JanusConfig.ts"
import { AdminRouter } from "./AdminRouter.ts"

/** A setting as shown: secrets masked, options unwrapped, durations and lists readable. */
export const display = (value: unknown, secret: boolean): string | number | boolean | null => {
  if (Option.isOption(value)) return Option.isNone(value) ? null : display(value.value, secret)
  if (secret) return (Array.isArray(value) && value.length === 0) || String(value) === "" ? null : "(set, hidden)"
  if (Redacted.isRedacted(value)) return "(set, hidden)"
  if (Duration.isDuration(value)) return Duration.format(value)
  if (Array.isArray(value)) return value.map((v) => String(v)).join(", ")
  if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") return value
  return String(value)
}

/** Every setting as `GET /api/v1/config` shows it: secrets hidden, endpoints without credentials. */
export const shown = (config: JanusSettings): Record<string, string | number | boolean | null> =>
  Object.fromEntries(
    Object.entries(VARIABLES).map(([name, variable]) => [
      name,
      display(config[name as keyof typeof VARIABLES], variable.secret === true)
    ])
  )

export type Source = "environment" | "default" | "key file"

/** Each variable with its value as shown, its meaning and where the value came from. */
export const described = (config: JanusSettings, present: (name: string) => boolean) =>
  Object.entries(VARIABLES).map(([name, variable]) => {
    const value = display(config[name as keyof typeof VARIABLES], variable.secret === true)
    const unchanged = value === display(variable.default, variable.secret === true)
    const keyFile = name === "JANUS_MASTER_KEY" && value === null && Option.isNone(config.DATABASE_URL)
    const source: Source = keyFile
      ? "key file"
      : present(name) || !unchanged
      ? "environment"
      : "default"
    return {
      name,
      value: keyFile ? `${display(config.JANUS_HOME, false)}/master.key` : value,
      description: variable.doc,
      source
    }
  })

export const ConfigRoutes: Layer.Layer<never, never, AdminRouter | JanusConfig> = Layer.effectDiscard(
  Effect.gen(function*() {
    const router = yield* AdminRouter
    const config = yield* JanusConfig
    const settings = shown(config)
    const set = new Set<string>()
    for (const name of Object.keys(VARIABLES)) {
      const raw = yield* Config.option(Config.String(name)).pipe(Effect.orElseSucceed(() => Option.none<string>()))
      if (Option.isSome(raw) && raw.value.trim() !== "") set.add(name)
    }
    const variables = described(config, (name) => set.has(name))
    yield* router.add("GET", "/config", Effect.succeed(HttpServerResponse.jsonUnsafe({ settings, variables })))
  })
)
