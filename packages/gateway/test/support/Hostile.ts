/**
 * Hostile values for property-based tests (fast-check), and a wire that
 * carries them as written: NUL, lone surrogates, U+2028, emoji and controls
 * in strings; 1e400, -1e400, 2^64 and long digit strings as JSON number
 * tokens (JSON.stringify cannot write them); header values as their UTF-8
 * bytes, over a raw socket where fetch refuses them (NUL, CR, LF).
 */
import fc from "fast-check"
import { Buffer } from "node:buffer"
import * as Net from "node:net"

// -----------------------------------------------------------------------------
// Values
// -----------------------------------------------------------------------------

/** Characters that broke or may break something: NUL, lone surrogates, separators, emoji, controls. */
export const NASTY: ReadonlyArray<string> = [
  "\u0000",
  "\ud800",
  "\udfff",
  "\u2028",
  "\u2029",
  "\u{1F600}",
  "\u{1F468}\u200d\u{1F469}",
  "\r",
  "\n",
  "\t",
  "\u0085",
  "\ufeff",
  "\uffff",
  "\u007f",
  "\u00e9",
  "%00",
  "%",
  "'",
  "\"",
  "\\",
  "/",
  "..",
  "{",
  "=?base64?",
  "?=",
  ";--"
]

const nastyChar = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NASTY) },
  { weight: 2, arbitrary: fc.string({ minLength: 1, maxLength: 1, unit: "grapheme-ascii" }) },
  { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 1, unit: "binary" }) }
)

/** A string made of hostile characters, sometimes long. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: fc.array(nastyChar, { maxLength: 10 }).map((parts) => parts.join("")) },
  { weight: 2, arbitrary: fc.constantFrom("x\u0000", "\u0000", "a\ud800", "\udc00b", "a\u2028b", "\u{1F600}", "") },
  { weight: 1, arbitrary: fc.tuple(fc.nat(5_000), nastyChar).map(([n, c]) => "x".repeat(n) + c) }
)

/** Hostile text a store can keep (well-formed, no NUL): what a valid write may carry. */
export const storableString: fc.Arbitrary<string> = hostileString.map((s) => s.toWellFormed().replaceAll("\u0000", ""))

/** Free text: storable or not. */
export const freeText: fc.Arbitrary<string> = fc.oneof(storableString, hostileString)

/** A number as written in JSON text: JSON.stringify cannot write 1e400, so numbers travel as tokens. */
export class RawNumber {
  readonly token: string
  constructor(token: string) {
    this.token = token
  }
  /** Whether JSON.parse reads it as a finite number. */
  get finite(): boolean {
    return Number.isFinite(Number(this.token))
  }
}

/** Numbers no double holds exactly, or at all. */
export const OVERSIZED: ReadonlyArray<string> = [
  "1e400",
  "-1e400",
  "18446744073709551616",
  "-18446744073709551616",
  "9007199254740993",
  "1".repeat(40),
  "9".repeat(400),
  "-" + "9".repeat(400),
  "1e-400",
  "-0",
  "0.1e999999",
  "123456789012345678901234567890.5"
]

export const hostileNumber: fc.Arbitrary<RawNumber> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...OVERSIZED) },
  { weight: 1, arbitrary: fc.integer().map(String) },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)) }
).map((token) => new RawNumber(token))

/** A natural number up to `max`, or a hostile one. */
export const hostileNat = (max: number): fc.Arbitrary<RawNumber> =>
  fc.oneof({ weight: 3, arbitrary: fc.nat(max).map((n) => new RawNumber(String(n))) }, {
    weight: 1,
    arbitrary: hostileNumber
  })

/** JSON with number tokens kept as written. */
export type Json =
  | null
  | boolean
  | number
  | string
  | RawNumber
  | ReadonlyArray<Json>
  | { readonly [key: string]: Json }

export const hostileJson: fc.Arbitrary<Json> = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", maxDepth: 3 },
    hostileString,
    hostileNumber,
    fc.constantFrom<Json>(null, true, false),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(hostileString, tie("value"), { maxKeys: 4 })
  )
})).value

/** Any hostile value: text, a number token, or JSON. */
export const hostileValue: fc.Arbitrary<Json> = fc.oneof(hostileString, hostileNumber, hostileJson)

/** A header value: hostile text (sent as UTF-8 bytes, raw NUL/CR/LF included) or a number token. */
export const hostileHeader: fc.Arbitrary<string> = fc.oneof(hostileString, hostileNumber.map((n) => n.token))

/** JSON text with the number tokens as written (`1e400` stays `1e400`). */
export const toJson = (value: Json | undefined): string => {
  if (value === undefined) return "null"
  if (value instanceof RawNumber) return value.token
  if (Array.isArray(value)) return `[${value.map(toJson).join(",")}]`
  if (value !== null && typeof value === "object") {
    const members = Object.entries(value as { readonly [key: string]: Json })
    return `{${members.map(([k, v]) => `${JSON.stringify(k)}:${toJson(v)}`).join(",")}}`
  }
  return JSON.stringify(value)
}

/**
 * `body` with 0 to 2 of its members replaced by hostile values: a valid body
 * with one wrong member reaches further into validation than an all-wrong one.
 */
export const mutated = (body: fc.Arbitrary<{ readonly [key: string]: Json }>) =>
  fc.tuple(body, fc.array(fc.tuple(fc.nat(), hostileValue), { maxLength: 2 })).map(([valid, changes]) => {
    const keys = Object.keys(valid)
    const out: Record<string, Json> = { ...valid }
    for (const [index, value] of changes) if (keys.length > 0) out[keys[index % keys.length]!] = value
    return out
  })

/** Percent-encodes the UTF-8 (WTF-8 for lone surrogates) bytes of `s`: invalid UTF-8 stays invalid on the wire. */
export const percentEncode = (s: string): string => {
  let out = ""
  for (const char of s) {
    if (/^[A-Za-z0-9\-._~]$/.test(char)) {
      out += char
      continue
    }
    const code = char.codePointAt(0)!
    const bytes = code >= 0xd800 && code <= 0xdfff
      ? [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)]
      : [...Buffer.from(char, "utf8")]
    for (const b of bytes) out += `%${b.toString(16).toUpperCase().padStart(2, "0")}`
  }
  return out
}

/** `=?base64?…?=` of `s` (2026-07-28 "Value Encoding"); plain when it is visible ASCII. */
export const headerValueOf = (s: string): string =>
  /^[\x21-\x7e]+$/.test(s) && !s.startsWith("=?") ? s : `=?base64?${Buffer.from(s, "utf8").toString("base64")}?=`

// -----------------------------------------------------------------------------
// The wire: fetch where it can carry the request, a raw socket where it cannot
// -----------------------------------------------------------------------------

export interface Wire {
  readonly method: string
  /** The request target as sent (already percent-encoded where intended; raw bytes go by socket). */
  readonly path: string
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly body?: string | undefined
  /** Read only the status: a stream (GET /mcp, the events stream) stays open otherwise. */
  readonly statusOnly?: boolean | undefined
}

export interface Answer {
  readonly status: number
  readonly text: string
  readonly wire: Wire
}

/** A header value as bytes on the wire: UTF-8, so U+2028 and emoji arrive as the bytes a client would send. */
const latin1Of = (value: string): string => Buffer.from(value, "utf8").toString("latin1")

const fetchable = (wire: Wire): boolean =>
  wire.headers.every(([, v]) => !/[\0\r\n]/.test(v)) && /^[\x21-\x7e]*$/.test(wire.path)

const viaFetch = async (base: URL, wire: Wire): Promise<Answer> => {
  const headers = new Headers()
  for (const [name, value] of wire.headers) headers.append(name, latin1Of(value))
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), 20_000)
  try {
    const response = await fetch(new URL(wire.path, base), {
      method: wire.method,
      headers,
      ...(wire.body === undefined || wire.method === "GET" || wire.method === "HEAD" ? {} : { body: wire.body }),
      signal: controller.signal
    })
    const stream = (response.headers.get("content-type") ?? "").startsWith("text/event-stream")
    if (wire.statusOnly === true || (stream && wire.method === "GET")) {
      await response.body?.cancel().catch(() => undefined)
      return { status: response.status, text: "", wire }
    }
    return { status: response.status, text: await response.text(), wire }
  } finally {
    clearTimeout(timer)
  }
}

/** Exactly these bytes on a socket; the status line is all that is read. */
const viaSocket = (base: URL, wire: Wire): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const body = wire.body === undefined ? Buffer.alloc(0) : Buffer.from(wire.body, "utf8")
    const head = [
      `${wire.method} ${wire.path} HTTP/1.1`,
      `host: ${base.host}`,
      ...wire.headers.map(([name, value]) => `${name}: ${value}`),
      `content-length: ${body.length}`,
      "connection: close",
      "",
      ""
    ].join("\r\n")
    const socket = Net.connect(Number(base.port), base.hostname)
    let received = ""
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no status line within 20 s for ${wire.method} ${wire.path}`))
    }, 20_000)
    socket.on("connect", () => socket.end(Buffer.concat([Buffer.from(head, "utf8"), body])))
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1")
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(received)
      if (match !== null) {
        clearTimeout(timer)
        socket.destroy()
        resolve({ status: Number(match[1]), text: received.slice(0, 2_000), wire })
      }
    })
    socket.on("error", (error) => {
      clearTimeout(timer)
      reject(error)
    })
    socket.on("close", () => {
      clearTimeout(timer)
      // a server that closes the connection without a status line answered no 5xx
      if (!/^HTTP\//.test(received)) resolve({ status: 0, text: "", wire })
    })
  })

/** Sends `wire`: fetch where it can carry it; otherwise (or when undici refuses a header) a raw socket. */
export const send = (base: URL, wire: Wire): Promise<Answer> =>
  fetchable(wire)
    ? viaFetch(base, wire).catch((error: { cause?: { code?: string } }) => {
      if (error?.cause?.code === "UND_ERR_INVALID_ARG") return viaSocket(base, wire)
      throw error
    })
    : viaSocket(base, wire)

/** The JSON-RPC messages of a body (JSON, a batch, or SSE `data:` lines). */
const jsonRpcMessages = (text: string): ReadonlyArray<{ readonly error?: { readonly code?: unknown } }> => {
  const out: Array<{ readonly error?: { readonly code?: unknown } }> = []
  const take = (value: unknown) => {
    if (Array.isArray(value)) value.forEach(take)
    else if (typeof value === "object" && value !== null) out.push(value)
  }
  try {
    take(JSON.parse(text))
  } catch {
    for (const line of text.split("\n")) {
      if (!line.startsWith("data:")) continue
      try {
        take(JSON.parse(line.slice(5)))
      } catch {
        // not JSON: nothing to check
      }
    }
  }
  return out
}

/** Client input never yields a 5xx, nor a JSON-RPC internal error (-32603). */
export const assertNoServerError = (answer: Answer): void => {
  const where = () =>
    `${answer.wire.method} ${answer.wire.path} ${JSON.stringify(answer.wire.headers)} ${
      (answer.wire.body ?? "").slice(0, 400)
    } -> ${answer.status} ${answer.text.slice(0, 400)}`
  if (answer.status >= 500) throw new Error(`5xx on client input: ${where()}`)
  for (const message of jsonRpcMessages(answer.text)) {
    if (message.error?.code === -32603) throw new Error(`JSON-RPC internal error on client input: ${where()}`)
  }
}

/**
 * Checks `run` on `numRuns` values from `seed` (fast-check prints the seed
 * and the shrunk counterexample on failure). With `HOSTILE_FUZZ_ALL=1` a
 * failure does not stop the run: every failing value is collected (no
 * shrinking) and all are reported at the end.
 */
export const check = async <A>(
  arbitrary: fc.Arbitrary<A>,
  options: { readonly numRuns: number; readonly seed: number },
  run: (value: A) => Promise<void>
): Promise<void> => {
  if (process.env.HOSTILE_FUZZ_ALL !== "1") return fc.assert(fc.asyncProperty(arbitrary, run), options)
  const failures: Array<string> = []
  await fc.assert(
    fc.asyncProperty(arbitrary, (value) =>
      run(value).catch((error: Error) => {
        failures.push(error.message)
      })),
    options
  )
  if (failures.length > 0) {
    throw new Error(`${failures.length} failures (seed ${options.seed}):\n${failures.join("\n")}`)
  }
}
