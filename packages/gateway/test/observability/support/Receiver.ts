/**
 * An OTLP/HTTP receiver on 127.0.0.1 for tests: accepts JSON exports on
 * `/v1/traces`, `/v1/metrics` and `/v1/logs` and keeps them decoded.
 */
import { Context, Effect, Layer } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

export interface OtlpAttribute {
  readonly key: string
  readonly value: {
    readonly stringValue?: string
    readonly intValue?: string | number
    readonly doubleValue?: number
    readonly boolValue?: boolean
  }
}

export interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string | undefined
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<OtlpAttribute>
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string }>
  readonly status: { readonly code: number; readonly message?: string }
}

export interface ReceiverState {
  url: string
  readonly traces: Array<any>
  readonly metrics: Array<any>
  readonly logs: Array<any>
  /** Headers of the last export request. */
  lastHeaders: Record<string, string | Array<string> | undefined>
}

export class Receiver extends Context.Service<Receiver, ReceiverState>()("test/OtlpReceiver") {}

export const layer: Layer.Layer<Receiver> = Layer.effect(
  Receiver,
  Effect.acquireRelease(
    Effect.callback<{ state: ReceiverState; close: () => void }>((resume) => {
      const state: ReceiverState = { url: "", traces: [], metrics: [], logs: [], lastHeaders: {} }
      const server = createServer((req, res) => {
        let body = ""
        req.setEncoding("utf8")
        req.on("data", (chunk) => (body += chunk))
        req.on("end", () => {
          state.lastHeaders = req.headers
          try {
            const json = JSON.parse(body)
            if (req.url === "/v1/traces") state.traces.push(json)
            else if (req.url === "/v1/metrics") state.metrics.push(json)
            else if (req.url === "/v1/logs") state.logs.push(json)
          } catch {
            res.writeHead(400).end()
            return
          }
          res.writeHead(200, { "content-type": "application/json" }).end("{}")
        })
      })
      server.listen(0, "127.0.0.1", () => {
        state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
        resume(Effect.succeed({
          state,
          close: () => {
            server.closeAllConnections()
            server.close()
          }
        }))
      })
    }),
    ({ close }) => Effect.sync(close)
  ).pipe(Effect.map(({ state }) => Receiver.of(state)))
)

/** Every span received so far. */
export const spans = (state: ReceiverState): Array<OtlpSpan> =>
  state.traces.flatMap((t) =>
    t.resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans as Array<OtlpSpan>))
  )

/** Resource attributes of the received traces. */
export const resources = (state: ReceiverState): Array<Record<string, unknown>> =>
  state.traces.flatMap((t) => t.resourceSpans.map((rs: any) => attributes(rs.resource.attributes)))

/** Names of every metric received so far. */
export const metricNames = (state: ReceiverState): Set<string> =>
  new Set(
    state.metrics.flatMap((m) =>
      m.resourceMetrics.flatMap((rm: any) =>
        rm.scopeMetrics.flatMap((sm: any) => sm.metrics.map((metric: any) => metric.name as string))
      )
    )
  )

/** Every log record body received so far, as text. */
export const logBodies = (state: ReceiverState): Array<{ body: string; traceId: string | undefined }> =>
  state.logs.flatMap((l) =>
    l.resourceLogs.flatMap((rl: any) =>
      rl.scopeLogs.flatMap((sl: any) =>
        sl.logRecords.map((r: any) => ({ body: JSON.stringify(r.body), traceId: r.traceId || undefined }))
      )
    )
  )

/** OTLP attributes as a plain record. */
export const attributes = (list: ReadonlyArray<OtlpAttribute>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const { key, value } of list) {
    out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ??
      value.doubleValue ?? value.boolValue
  }
  return out
}
