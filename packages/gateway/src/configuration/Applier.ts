/**
 * Export and apply of configuration documents, against the database.
 *
 * **Rules**
 *
 * - `export` reads everything in one repeatable-read transaction (one
 *   snapshot) and writes it as a document, with the `basis` it was read at.
 * - `apply` runs in one transaction that first takes a transaction-scoped
 *   advisory lock ({@link LOCK_KEY}), so applies on every replica (CLI, admin
 *   API, `JANUS_CONFIG_FILE` at start) run one after the other, and locks
 *   the rows of connections, endpoints, virtual servers and secrets, so no
 *   admin write lands between the plan and its writes. It reads what is
 *   stored, plans (`Plan.make`) and carries the plan out through the storage
 *   repositories, which validate every write as they always do.
 * - `basis` identifies what a plan was made from (every resource's id and
 *   version; a token's definition). An apply given the basis of an earlier
 *   dry run fails with `ConfigurationChanged` when anything changed since,
 *   and so does one whose write finds a version changed or a name taken:
 *   nothing is applied, and the message says to plan again.
 * - Any failure rolls everything back: nothing is ever half-applied. A
 *   storage refusal is reported at the document path of the item being
 *   written (`connections[2].baseUrl`; see `Refusals.ts`). A dry run carries
 *   out the same writes, so it finds every refusal a real apply would, and
 *   rolls them back.
 * - `valueFrom.env` is read (through `Config`, so tests swap the provider)
 *   only where the environment is the operator's: the CLI and
 *   `JANUS_CONFIG_FILE` (`environment: "read"`), never for an admin API
 *   caller, who must not be able to copy the server's environment into a
 *   secret sent downstream. Janus's own variables (`JanusConfig.VARIABLES`,
 *   any `JANUS_*`) are refused as sources everywhere.
 * - Every write goes through one function (`write`), the place where an
 *   audit trail records changes by origin (CLI, admin API, Studio, file).
 *   Issued token values leave only in the result of a real apply, never in
 *   a log.
 *
 * @since 0.1.0
 */
import {
  AuditLog,
  ClientTokens,
  Connections,
  type EndpointInput,
  Endpoints,
  EventLog,
  Secrets,
  StorageError,
  VirtualServers
} from "@janus/storage"
import { Clock, Config, Context, Data, Effect, Layer, Option, Redacted } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { createHash, timingSafeEqual } from "node:crypto"
import * as Actor from "../audit/Actor.ts"
import * as AdminChanges from "../audit/AdminChanges.ts"
import { VARIABLES } from "../config/JanusConfig.ts"
import { canonical } from "../openapi/Plan.ts"
import {
  type ClientTokenItem,
  type Configuration,
  ConfigurationInvalid,
  type EndpointItem,
  invalid,
  within
} from "./Document.ts"
import { clientTokenFull, clientTokenItem, exportDocument, type State } from "./Items.ts"
import * as Plan from "./Plan.ts"
import { ConfigurationChanged, located, sqlFailure } from "./Refusals.ts"

export { ConfigurationChanged } from "./Refusals.ts"

/** The advisory lock every apply takes ("jconf" in ASCII). */
export const LOCK_KEY = 0x6a636f6e66

export type ApplyError = ConfigurationInvalid | ConfigurationChanged | StorageError

/** Who applies a document: for the log, and for the audit trail. */
export type Origin = "cli" | "api" | "studio" | "file"

export interface ApplyOptions {
  /** Plan, validate every write, and roll back. */
  readonly dryRun: boolean
  /** Remove what the document does not name (otherwise removals are only listed). */
  readonly prune: boolean
  /** The basis of the plan the caller saw (an earlier dry run's): the apply fails if anything changed since. */
  readonly basis?: string | undefined
  /** Whether `valueFrom.env` is read from this process's environment (see the rules). */
  readonly environment: "read" | "none"
  /** Whether a token the document adds without `valueFrom` may get a new value (returned once in the result). */
  readonly issueTokens: boolean
  readonly origin: Origin
}

/** A token value issued by an apply: shown once to whoever applied, like `janus token create`. */
export interface IssuedToken {
  readonly name: string
  readonly token: Redacted.Redacted<string>
}

export interface ApplyResult {
  readonly plan: Plan.Plan
  /** What the plan was made from. */
  readonly basis: string
  /** False for a dry run. */
  readonly applied: boolean
  readonly issuedTokens: ReadonlyArray<IssuedToken>
}

export interface Exported {
  readonly document: Readonly<Record<string, unknown>>
  readonly basis: string
}

/** Ends a dry run's transaction with a rollback, carrying its result out. */
class DryRun extends Data.TaggedError("DryRun")<{ readonly result: ApplyResult }> {}

/** The basis of `state`: a digest of every resource's identity and version (a token's definition). */
export const basisOf = (state: State): string => {
  const lines = [
    ...state.secrets.map((s) => `secret ${s.name} ${s.id} ${s.version}`),
    ...state.connections.map((c) => `connection ${c.name} ${c.id} ${c.version}`),
    ...state.endpoints.map((e) => `endpoint ${e.name} ${e.id} ${e.version}`),
    ...state.virtualServers.map((s) => `virtual_server ${s.name} ${s.id} ${s.version}`),
    ...state.clientTokens.map((t) =>
      `client_token ${t.name} ${t.id} ${t.prefix} ${canonical(clientTokenFull(clientTokenItem(t)))}`
    )
  ].sort()
  return createHash("sha256").update(lines.join("\n")).digest("hex").slice(0, 32)
}

const sameText = (a: string, b: string): boolean => {
  const x = Buffer.from(a, "utf8")
  const y = Buffer.from(b, "utf8")
  return x.length === y.length && timingSafeEqual(x, y)
}

const isJanusVariable = (name: string): boolean => name.startsWith("JANUS_") || Object.hasOwn(VARIABLES, name)

export class ConfigurationApplier extends Context.Service<ConfigurationApplier, {
  /** What is stored, as a document, and the basis it was read at. */
  readonly export: Effect.Effect<Exported, StorageError>
  /** Plans `document` against what is stored, and applies it unless `dryRun` (see the rules). */
  readonly apply: (document: Configuration, options: ApplyOptions) => Effect.Effect<ApplyResult, ApplyError>
}>()("@janus/gateway/configuration/ConfigurationApplier") {
  static readonly layer: Layer.Layer<
    ConfigurationApplier,
    never,
    SqlClient.SqlClient | Connections | Endpoints | VirtualServers | ClientTokens | Secrets | AuditLog | EventLog
  > = Layer.effect(
    ConfigurationApplier,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const auditLog = yield* AuditLog
      const eventLog = yield* EventLog
      const connections = yield* Connections
      const endpoints = yield* Endpoints
      const servers = yield* VirtualServers
      const tokens = yield* ClientTokens
      const secrets = yield* Secrets

      const readState: Effect.Effect<State, StorageError> = Effect.all({
        secrets: secrets.list,
        connections: connections.list,
        endpoints: endpoints.list(),
        virtualServers: servers.list,
        clientTokens: tokens.list
      })

      const exportNow = sql.withTransaction(
        Effect.andThen(sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`, readState)
      ).pipe(
        Effect.mapError((cause) => new StorageError({ operation: "configuration.export", cause })),
        Effect.map((state): Exported => ({ document: exportDocument(state), basis: basisOf(state) }))
      )

      // ---------------------------------------------------------------------
      // valueFrom
      // ---------------------------------------------------------------------

      const readEnv = (name: string) =>
        Config.option(Config.Redacted(name)).pipe(
          Effect.map(Option.filter((value) => Redacted.value(value) !== "")),
          Effect.orElseSucceed(() => Option.none<Redacted.Redacted<string>>())
        )

      /** Every `valueFrom` of the document: its value and whether it is stored; or the problems. */
      const resolve = Effect.fnUntraced(function*(doc: Configuration, state: State, options: ApplyOptions) {
        const resolved = new Map<string, Plan.Resolved>()
        const problems: Array<{ path: string; message: string }> = []
        const read = Effect.fnUntraced(function*(at: string, env: string, what: string) {
          if (isJanusVariable(env)) {
            problems.push({
              path: within(at, "valueFrom.env"),
              message: `got ${JSON.stringify(env)}, a variable of Janus's own configuration; expected a variable ` +
                `that holds only ${what}`
            })
            return Option.none<Redacted.Redacted<string>>()
          }
          if (options.environment === "none") {
            resolved.set(at, { _tag: "NotRead" })
            return Option.none<Redacted.Redacted<string>>()
          }
          const value = yield* readEnv(env)
          if (Option.isNone(value)) {
            problems.push({
              path: within(at, "valueFrom.env"),
              message: `the environment variable ${env} is not set (or empty); expected ${what} in it`
            })
          }
          return value
        })
        for (const { at, value: item } of doc.secrets) {
          if (item.valueFrom === undefined) continue
          const value = yield* read(at, item.valueFrom.env, "the secret's value")
          if (Option.isNone(value)) continue
          const exists = state.secrets.some((s) => s.name === item.name)
          // a value the current keys cannot open is stored again, under the current key
          const stored = exists &&
            (yield* secrets.reveal(item.name).pipe(
              Effect.map((current) => sameText(Redacted.value(current), Redacted.value(value.value))),
              Effect.catchTags({
                SecretDecryptionFailed: () => Effect.succeed(false),
                SecretNotFound: () => Effect.succeed(false)
              })
            ))
          resolved.set(at, { _tag: "Value", value: value.value, stored })
        }
        for (const { at, value: item } of doc.clientTokens) {
          if (item.valueFrom === undefined) continue
          const value = yield* read(at, item.valueFrom.env, "the token's value (jns_...)")
          if (Option.isNone(value)) continue
          const current = state.clientTokens.find((t) => t.name === item.name)
          const stored = current !== undefined && (yield* tokens.hasValue(current.id, value.value))
          resolved.set(at, { _tag: "Value", value: value.value, stored })
        }
        return { resolved, problems }
      })

      // ---------------------------------------------------------------------
      // Writes
      // ---------------------------------------------------------------------

      const endpointInput = (item: EndpointItem, connectionId: string): EndpointInput => ({
        connectionId,
        name: item.name,
        description: item.description,
        method: item.method,
        pathTemplate: item.pathTemplate,
        arguments: item.arguments,
        inputSchema: item.inputSchema,
        ...(item.outputSchema === undefined ? {} : { outputSchema: item.outputSchema }),
        ...(item.idempotent === undefined ? {} : { idempotent: item.idempotent })
      })

      const tokenInput = (item: ClientTokenItem) => ({
        name: item.name,
        allowedTools: item.allowedTools,
        allowedVirtualServers: item.allowedVirtualServers,
        expiresAt: item.expiresAt === undefined || item.expiresAt === null ? null : new Date(item.expiresAt)
      })

      /**
       * The one place every change of an apply is written (and where an audit trail records it). Returns a
       * token value it issued, if any.
       */
      /** The delete of each kind of stored item: by id. */
      const deleteOf = {
        ConnectionDelete: connections.delete,
        EndpointDelete: endpoints.delete,
        VirtualServerDelete: servers.delete,
        ClientTokenDelete: tokens.delete
      }

      const write = (step: Plan.Step, ids: Map<string, string>, origin: Origin) =>
        Effect.gen(function*() {
          const connectionId = (name: string) => ids.get(name) ?? ""
          switch (step._tag) {
            case "SecretSet":
              yield* secrets.set(step.change.name, step.value)
              return undefined
            case "SecretDelete":
              yield* secrets.delete(step.current.name)
              return undefined
            case "ConnectionCreate": {
              const created = yield* connections.create(step.item)
              ids.set(created.name, created.id)
              return undefined
            }
            case "ConnectionUpdate":
              yield* connections.update(step.current.id, step.current.version, step.item)
              return undefined
            case "EndpointCreate":
              yield* endpoints.create(endpointInput(step.item, connectionId(step.item.connection)))
              return undefined
            case "EndpointUpdate":
              yield* endpoints.update(
                step.current.id,
                step.current.version,
                endpointInput(step.item, connectionId(step.item.connection))
              )
              return undefined
            case "VirtualServerCreate":
              yield* servers.create(step.item)
              return undefined
            case "VirtualServerUpdate":
              yield* servers.update(step.current.id, step.current.version, step.item)
              return undefined
            case "ClientTokenCreate": {
              const created = yield* tokens.create(tokenInput(step.item), { value: step.value, allowExpired: true })
              if (step.item.revoked === true) {
                yield* tokens.revoke(created.token.id)
                return undefined
              }
              // a value goes back to whoever applied only when it was made here and can be used
              const now = new Date(yield* Clock.currentTimeMillis)
              return step.value === undefined && created.token.isActiveAt(now)
                ? { name: created.token.name, token: created.plaintext }
                : undefined
            }
            case "ClientTokenUpdate":
              if (step.definition || step.value !== undefined) {
                yield* tokens.update(step.current.id, tokenInput(step.item), { value: step.value, allowExpired: true })
              }
              if (step.revoke) yield* tokens.revoke(step.current.id)
              return undefined
            case "ConnectionDelete":
            case "EndpointDelete":
            case "VirtualServerDelete":
            case "ClientTokenDelete":
              yield* deleteOf[step._tag](step.current.id)
              return undefined
          }
        }).pipe(
          Effect.mapError((error) => located(step, error)),
          Effect.annotateLogs({ configurationOrigin: origin })
        )

      // NO KEY UPDATE: blocks other writers' updates and deletes of these rows, but not the reference checks
      // (FOR KEY SHARE) of their writes, which would otherwise deadlock with this transaction
      const lockRows = Effect.all([
        sql`SELECT id FROM connections FOR NO KEY UPDATE`,
        sql`SELECT id FROM endpoints FOR NO KEY UPDATE`,
        sql`SELECT id FROM virtual_servers FOR NO KEY UPDATE`,
        sql`SELECT id FROM secrets FOR NO KEY UPDATE`
      ], { discard: true })

      const applyInTransaction = (doc: Configuration, options: ApplyOptions) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT pg_advisory_xact_lock(${LOCK_KEY})`
          // a dry run writes too (to find every refusal), so it locks as much; it holds them only briefly
          yield* lockRows
          const state = yield* readState
          const basis = basisOf(state)
          if (options.basis !== undefined && options.basis !== basis) {
            return yield* new ConfigurationChanged({
              detail: `the plan was made from ${options.basis}, the configuration is now at ${basis}`
            })
          }
          const { problems, resolved } = yield* resolve(doc, state, options)
          const made = Plan.make(doc, state, { prune: options.prune, issueTokens: options.issueTokens, resolved })
          if (made instanceof ConfigurationInvalid || problems.length > 0) {
            return yield* Effect.fail(invalid([
              ...problems,
              ...(made instanceof ConfigurationInvalid ? made.problems : [])
            ]))
          }
          const ids = new Map(state.connections.map((c) => [c.name, c.id]))
          const issued: Array<IssuedToken> = []
          for (const step of made.steps) {
            const token = yield* write(step, ids, options.origin)
            if (token !== undefined) issued.push(token)
          }
          const result: ApplyResult = { plan: made.plan, basis, applied: !options.dryRun, issuedTokens: issued }
          // issued values die with the rolled-back dry run
          if (options.dryRun) return yield* new DryRun({ result: { ...result, issuedTokens: [] } })
          return result
        })).pipe(
          Effect.catchTag("DryRun", (rolledBack) => Effect.succeed(rolledBack.result)),
          Effect.catchTag("SqlError", (error) => Effect.fail(sqlFailure(error))),
          Effect.tap((result) => {
            const made = result.plan.changes.filter((c) => c.action !== "remove" || result.plan.prune)
            return result.applied && made.length > 0
              ? Effect.logInfo("configuration applied").pipe(Effect.annotateLogs({
                origin: options.origin,
                changes: made.map((c) => `${c.action} ${c.section} ${c.name}`)
              }))
              : Effect.void
          })
        )

      /**
       * The apply, its changes audited once it committed (none for a dry run): by the actor of the request or
       * command, through `apply` (see `audit/Actor.ts` for why they wait).
       */
      const apply = (doc: Configuration, options: ApplyOptions) =>
        Effect.gen(function*() {
          const by = (yield* Actor.CurrentActor) ??
            (options.origin === "file" ? { ...Actor.system, name: "JANUS_CONFIG_FILE" } : Actor.system)
          return yield* AdminChanges.afterCommit(auditLog, eventLog)(
            applyInTransaction(doc, options),
            (result) => result.applied
          ).pipe(Effect.provideService(Actor.CurrentActor, { ...by, interface: "apply" }))
        })

      return ConfigurationApplier.of({ export: exportNow, apply })
    })
  )
}
