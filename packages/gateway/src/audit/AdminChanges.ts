/**
 * Every admin change audited, whatever the interface: the repositories of
 * the configuration (connections, endpoints, virtual servers, client and
 * admin tokens, secrets and the master key) decorated so that each write
 * that succeeds records one `admin` row and one `admin` event.
 *
 * **Rules**
 *
 * - The decoration sits right above storage, so the admin API, Studio, an
 *   apply (API, CLI or JANUS_CONFIG_FILE) and the CLI (which writes to the
 *   database itself) all go through it: no entry point can forget it.
 * - A row holds the actor and interface (`Actor`), the action (`create`,
 *   `update`, `delete`, `revoke`, `set`, `rotate`), the resource's kind, id
 *   and name, its version before and after (null where the resource has no
 *   version, or none yet), and the changed fields (`Diff`: credentials only
 *   as `"changed"`). The state before is read just before the write.
 * - Only writes that succeed are changes; a failed write is not recorded.
 *   Inside an apply or an OpenAPI import (one transaction each), changes
 *   wait for its commit ({@link afterCommit}, `Actor.Deferred`).
 * - The `admin` event carries the row (no secret either, and the row's own
 *   `at`) so Studio shows changes live; `about` is
 *   `[<resource kind>, <resource id>]`.
 *
 * @since 0.1.0
 */
import {
  AdminTokens,
  type AuditInput,
  AuditLog,
  ClientTokens,
  Connections,
  Endpoints,
  EventLog,
  Secrets,
  VirtualServers
} from "@janus/storage"
import { Clock, Effect, Layer, Option } from "effect"
import * as Actor from "./Actor.ts"
import { type Changes, diff } from "./Diff.ts"

/** What changed, as the decorators see it. */
export interface Change {
  readonly action: string
  readonly resourceKind: string
  readonly resourceId: string | null
  readonly resourceName: string | null
  readonly versionBefore?: number | null | undefined
  readonly versionAfter?: number | null | undefined
  readonly changes: Changes
}

/** The audit input of `change` made by `actor`. */
export const inputOf = (change: Change, actor: Actor.Actor): AuditInput => ({
  kind: "admin",
  identity: actor.identity,
  outcome: "ok",
  callerName: actor.name,
  callerSubject: actor.subject,
  callerClient: actor.client,
  interface: actor.interface,
  requestId: actor.requestId,
  clientIp: actor.clientIp,
  action: change.action,
  resourceKind: change.resourceKind,
  resourceId: change.resourceId,
  resourceName: change.resourceName,
  versionBefore: change.versionBefore ?? null,
  versionAfter: change.versionAfter ?? null,
  changes: JSON.stringify(change.changes)
})

/**
 * Writes `input` (an admin row) and its `admin` event, both stamped with the
 * same `at`: the event carries no row id (the database numbers the row at
 * its flush), so Studio tells a live row from the stored one by what both
 * hold (`at`, action, resource, version after).
 */
export const write = (log: AuditLog["Service"], events: EventLog["Service"], input: AuditInput) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const at = input.at ?? new Date(now)
    return Effect.andThen(
      log.record({ ...input, at }),
      events.append({
        topic: "admin",
        about: [input.resourceKind ?? "", input.resourceId ?? ""],
        data: { ...input, changes: JSON.parse(input.changes ?? "{}") as unknown, at: at.toISOString() }
      })
    )
  })

/**
 * `transaction` (one database transaction making admin changes) with its
 * changes audited once it committed, none when it failed: written inside it,
 * a row would wait for the connection the transaction holds (embedded mode
 * has one), and a change rolled back is no change (see `Actor.Deferred`).
 */
export const afterCommit = (log: AuditLog["Service"], events: EventLog["Service"]) =>
<A, E, R>(
  transaction: Effect.Effect<A, E, R>,
  /** Whether it committed, for a transaction that can succeed without (a dry run rolls back and succeeds). */
  committed: (result: A) => boolean = () => true
): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const collected: Array<AuditInput> = []
    const result = yield* Effect.provideService(transaction, Actor.Deferred, collected)
    if (committed(result)) yield* Effect.forEach(collected, (input) => write(log, events, input), { discard: true })
    return result
  })

interface Versioned {
  readonly id: string
  readonly name: string
  readonly version: number
}

const makeRecorder = Effect.gen(function*() {
  const log = yield* AuditLog
  const events = yield* EventLog
  const record = (change: Change): Effect.Effect<void> =>
    Effect.gen(function*() {
      const actor = (yield* Actor.CurrentActor) ?? Actor.system
      const input = inputOf(change, actor)
      const deferred = yield* Actor.Deferred
      if (deferred !== undefined) {
        deferred.push(input)
        return
      }
      yield* write(log, events, input)
    })

  /** `op`, and when it succeeds the change `describe` makes of the state before (`before`) and its result. */
  const audited = <B, A, E, R>(
    before: Effect.Effect<B | undefined, unknown>,
    op: Effect.Effect<A, E, R>,
    describe: (before: B | undefined, result: A) => Change | ReadonlyArray<Change>
  ): Effect.Effect<A, E, R> =>
    Effect.flatMap(Effect.orElseSucceed(before, () => undefined), (b) =>
      Effect.tap(op, (result) => {
        const made = describe(b, result)
        return Effect.forEach(Array.isArray(made) ? made : [made as Change], record, { discard: true })
      }))

  /** create / update / delete of a versioned resource. */
  const versioned = <A extends Versioned>(kind: string) => ({
    created: (_: unknown, after: A): Change => ({
      action: "create",
      resourceKind: kind,
      resourceId: after.id,
      resourceName: after.name,
      versionAfter: after.version,
      changes: diff(undefined, after)
    }),
    updated: (before: A | undefined, after: A): Change => ({
      action: "update",
      resourceKind: kind,
      resourceId: after.id,
      resourceName: after.name,
      versionBefore: before?.version ?? null,
      versionAfter: after.version,
      changes: diff(before, after)
    }),
    deleted: (id: string) => (before: A | undefined): Change => ({
      action: "delete",
      resourceKind: kind,
      resourceId: id,
      resourceName: before?.name ?? null,
      versionBefore: before?.version ?? null,
      changes: diff(before, undefined)
    })
  })
  return { audited, versioned }
})

const connections = Layer.effect(
  Connections,
  Effect.gen(function*() {
    const inner = yield* Connections
    const { audited, versioned } = yield* makeRecorder
    const d = versioned<
      Connections["Service"] extends { get: (id: string) => Effect.Effect<infer A, any> } ? A : never
    >(
      "connection"
    )
    return Connections.of({
      ...inner,
      create: (input) => audited(Effect.void, inner.create(input), d.created),
      update: (id, version, input) => audited(inner.get(id), inner.update(id, version, input), d.updated),
      delete: (id) => audited(inner.get(id), inner.delete(id), d.deleted(id))
    })
  })
)

const endpoints = Layer.effect(
  Endpoints,
  Effect.gen(function*() {
    const inner = yield* Endpoints
    const { audited, versioned } = yield* makeRecorder
    const d = versioned<Endpoints["Service"] extends { get: (id: string) => Effect.Effect<infer A, any> } ? A : never>(
      "endpoint"
    )
    return Endpoints.of({
      ...inner,
      create: (input) => audited(Effect.void, inner.create(input), d.created),
      createMany: (inputs) =>
        audited(Effect.void, inner.createMany(inputs), (_, made) => made.map((e) => d.created(undefined, e))),
      update: (id, version, input) => audited(inner.get(id), inner.update(id, version, input), d.updated),
      delete: (id) => audited(inner.get(id), inner.delete(id), d.deleted(id))
    })
  })
)

const virtualServers = Layer.effect(
  VirtualServers,
  Effect.gen(function*() {
    const inner = yield* VirtualServers
    const { audited, versioned } = yield* makeRecorder
    const d = versioned<
      VirtualServers["Service"] extends { get: (id: string) => Effect.Effect<infer A, any> } ? A : never
    >("virtual_server")
    return VirtualServers.of({
      ...inner,
      create: (input) => audited(Effect.void, inner.create(input), d.created),
      update: (id, version, input) => audited(inner.get(id), inner.update(id, version, input), d.updated),
      delete: (id) => audited(inner.get(id), inner.delete(id), d.deleted(id))
    })
  })
)

const clientTokens = Layer.effect(
  ClientTokens,
  Effect.gen(function*() {
    const inner = yield* ClientTokens
    const { audited } = yield* makeRecorder
    const kind = "client_token"
    const token = (
      action: string,
      id: string,
      before: unknown,
      after: { readonly name: string } | undefined,
      extra: Changes = {}
    ): Change => ({
      action,
      resourceKind: kind,
      resourceId: id,
      resourceName: after?.name ?? (before as { name?: string } | undefined)?.name ?? null,
      changes: { ...diff(before, after), ...extra }
    })
    // when a token was last used is not a change of it
    const withoutUse = (t: object | undefined): { readonly name: string } | undefined =>
      t === undefined ? undefined : { ...(JSON.parse(JSON.stringify(t))), lastUsedAt: undefined }
    return ClientTokens.of({
      ...inner,
      create: (input, options) =>
        audited(
          Effect.void,
          inner.create(input, options),
          (_, made) => token("create", made.token.id, undefined, withoutUse(made.token), { value: "changed" })
        ),
      update: (id, input, options) =>
        audited(inner.get(id), inner.update(id, input, options), (before, after) =>
          token(
            "update",
            id,
            withoutUse(before),
            withoutUse(after),
            options?.value === undefined ? {} : { value: "changed" }
          )),
      revoke: (id) =>
        audited(
          inner.get(id),
          inner.revoke(id),
          (before, after) => token("revoke", id, withoutUse(before), withoutUse(after))
        ),
      delete: (id) =>
        audited(inner.get(id), inner.delete(id), (before) => token("delete", id, withoutUse(before), undefined))
    })
  })
)

const adminTokens = Layer.effect(
  AdminTokens,
  Effect.gen(function*() {
    const inner = yield* AdminTokens
    const { audited } = yield* makeRecorder
    const change = (action: string, t: { readonly id: string; readonly name: string }, before?: unknown): Change => ({
      action,
      resourceKind: "admin_token",
      resourceId: t.id,
      resourceName: t.name,
      changes: action === "create" ? { ...diff(undefined, t), value: "changed" } : diff(before, t)
    })
    const find = (id: string) => Effect.map(inner.list, (all) => all.find((t) => t.id === id))
    return AdminTokens.of({
      ...inner,
      create: (input) => audited(Effect.void, inner.create(input), (_, made) => change("create", made.token)),
      createInitial: (name) =>
        audited(
          Effect.void,
          inner.createInitial(name),
          (_, made) => Option.isSome(made) ? [change("create", made.value.token)] : []
        ),
      revoke: (id) => audited(find(id), inner.revoke(id), (before, after) => change("revoke", after, before))
    })
  })
)

const secrets = Layer.effect(
  Secrets,
  Effect.gen(function*() {
    const inner = yield* Secrets
    const { audited } = yield* makeRecorder
    const find = (name: string) => Effect.map(inner.list, (all) => all.find((s) => s.name === name))
    return Secrets.of({
      ...inner,
      set: (name, value) =>
        audited(find(name), inner.set(name, value), (before, after) => ({
          action: before === undefined ? "create" : "update",
          resourceKind: "secret",
          resourceId: after.id,
          resourceName: after.name,
          versionBefore: before?.version ?? null,
          versionAfter: after.version,
          changes: { value: "changed" }
        })),
      delete: (name) =>
        audited(find(name), inner.delete(name), (before) => ({
          action: "delete",
          resourceKind: "secret",
          resourceId: before?.id ?? null,
          resourceName: name,
          versionBefore: before?.version ?? null,
          changes: { value: "changed" }
        })),
      rotate: (key) =>
        audited(Effect.void, inner.rotate(key), (_, report) => ({
          action: "rotate",
          resourceKind: "master_key",
          resourceId: report.keyId,
          resourceName: null,
          changes: { key: "changed", reencrypted: { old: null, new: report.reencrypted } }
        }))
    })
  })
)

/** The repositories, decorated: provide storage to it (it needs `AuditLog` and `EventLog` from there too). */
export const layer = Layer.mergeAll(connections, endpoints, virtualServers, clientTokens, adminTokens, secrets)
