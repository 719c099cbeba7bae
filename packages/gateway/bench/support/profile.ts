/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`): the top functions
 * by self time, and the time grouped by step of the tools/call hot path.
 *
 * Two groupings, both over the samples inside an optional time window (the
 * profile's timestamps are CLOCK_MONOTONIC microseconds, the clock of
 * `process.hrtime`, so a harness can cut out start-up and shutdown):
 *
 * - **self time by category**: each sample goes to the category of the
 *   function it was taken in (the leaf frame): a Janus module by hot-path
 *   step, or the library or runtime part doing the work (effect runtime,
 *   JSON, node HTTP, undici, GC...).
 * - **by hot-path step (innermost Janus frame)**: each sample goes to the
 *   innermost frame on its stack that is Janus code (`packages/<pkg>/src`),
 *   so effect-runtime, JSON and I/O work is charged to the step that asked
 *   for it; samples with no Janus frame on the stack keep their library
 *   category ("outside Janus code": the HTTP server, the scheduler, GC).
 *
 * Usage as a script: node packages/gateway/bench/support/profile.ts <file.cpuprofile> [fromUs toUs]
 */

interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
  readonly columnNumber: number
}

interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}

export interface CpuProfile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly startTime: number
  readonly endTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

export interface Share {
  readonly name: string
  readonly ms: number
  /** Percent of the busy (non-idle) time. */
  readonly pct: number
}

export interface ProfileSummary {
  /** Wall time covered by the samples kept, ms. */
  readonly windowMs: number
  /** Time not idle, ms. */
  readonly busyMs: number
  readonly idlePct: number
  readonly topSelf: ReadonlyArray<Share>
  readonly selfByCategory: ReadonlyArray<Share>
  readonly byStep: ReadonlyArray<Share>
  /**
   * Embedded-database work (PGlite frames on the stack) runs synchronously on
   * the event loop: the longest unbroken run of such samples, ms, and how many
   * runs lasted 10 ms or more (every call in flight waits that long).
   */
  readonly pgliteLongestMs: number
  readonly pgliteRunsOver10Ms: number
}

/** A Janus source file: `packages/<pkg>/src/<path>`. */
const janusPath = (url: string): { readonly pkg: string; readonly path: string } | undefined => {
  const match = /\/packages\/(gateway|storage|sse)\/src\/(.+)$/.exec(url)
  return match ? { pkg: match[1]!, path: match[2]! } : undefined
}

/** The hot-path step of a Janus source file. */
const janusStep = (pkg: string, path: string): string => {
  if (pkg === "sse") return "audit (calls event to the Studio hub)"
  if (pkg === "storage") {
    if (/ConfigCache|SecretCache|TokenCache|CacheSettings/.test(path)) return "cache (config, token, secret)"
    if (/AuditLog|EventLog/.test(path)) return "audit (record, event log)"
    if (/McpSessions/.test(path)) return "sessions (2025 session store)"
    if (/ClientTokens|AdminTokens/.test(path)) return "auth"
    if (/Secrets|Crypto|MasterKey/.test(path)) return "secrets"
    return "storage (other)"
  }
  const [dir] = path.split("/")
  if (/limit/i.test(path)) return "limiters"
  switch (dir) {
    case "auth":
    case "oauth":
      return "auth"
    case "egress":
      return "egress (guard, pooled client, retry, breaker)"
    case "calls":
      return "audit (record, guard bookkeeping)"
    case "events":
      return "audit (calls event to the Studio hub)"
    case "redaction":
      return "redaction"
    case "tools":
      return "resolve + REST mapping (catalog)"
    case "mcp":
      return /ToolCatalog/.test(path) ? "resolve + REST mapping (catalog)" : "MCP transport + JSON-RPC dispatch"
    case "sessions":
      return "sessions (2025 session store)"
    case "cache":
      return "cache (response)"
    case "observability":
      return "observability"
    default:
      return `gateway: ${path}`
  }
}

/** The category of the function a sample was taken in. */
export const categoryOf = (frame: CallFrame): string => {
  const { functionName: name, url } = frame
  if (name === "(idle)") return "(idle)"
  if (name === "(garbage collector)") return "GC"
  if (name === "(program)") return "V8 / native (program)"
  if (name === "(root)") return "(root)"
  const janus = janusPath(url)
  if (janus) return janusStep(janus.pkg, janus.path)
  if (url === "") {
    if (/^(JSON\.)?(parse|stringify)$/.test(name)) return "JSON (parse / stringify)"
    // libuv writes: the syscall, and on loopback the kernel's delivery to the reader too
    if (/^write(v|Buffer|Latin1String|Utf8String|AsciiString|Ucs2String)$/.test(name)) return "socket writes (syscall)"
    if (/^(read|readStart|onStreamRead)$/.test(name)) return "socket reads (syscall)"
    if (/^(js-to-wasm|wasm-to-js)$/.test(name)) return "storage (PGlite)"
    return "V8 / native builtins"
  }
  if (url.startsWith("wasm://")) return "storage (PGlite)"
  if (/node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?undici\//.test(url)) return "egress (undici HTTP client)"
  if (/@electric-sql\/pglite/.test(url)) return "storage (PGlite)"
  if (/node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?jose\//.test(url)) return "auth"
  if (/@effect\/platform-node|\/effect\/dist\/.*\/(http|Http)/.test(url)) {
    return "HTTP server (effect/http, platform-node)"
  }
  if (/\/effect\/dist\/.*\/(Schema|SchemaAST|SchemaParser|SchemaIssue|schema\/)/.test(url)) return "effect Schema"
  if (/\/effect\/dist\//.test(url)) return "effect runtime"
  if (/@modelcontextprotocol\/|\/zod\//.test(url)) return "MCP SDK (+ zod)"
  if (/@hono\/node-server|\/hono\//.test(url)) return "hono node adapter"
  if (url.startsWith("node:")) {
    if (/node:_http|node:http/.test(url)) return "node HTTP (parser, server, agent)"
    if (/node:net|node:internal\/(stream|streams|net)|node:stream/.test(url)) return "node net + streams"
    if (/node:internal\/(deps\/undici|webstreams|fetch)/.test(url)) return "node fetch / web streams"
    if (/node:internal\/(modules|bootstrap)|node:internal\/deps\/amaro/.test(url)) return "module loading"
    if (/node:async_hooks|node:internal\/async_hooks/.test(url)) return "node async_hooks (AsyncResource)"
    return "node internals (timers, events, ...)"
  }
  if (/node_modules/.test(url)) {
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*node_modules)/.exec(url)?.[1]
    return `library: ${pkg ?? "?"}`
  }
  return "other JavaScript"
}

const shortUrl = (url: string): string => {
  const janus = janusPath(url)
  if (janus) return `${janus.pkg}/src/${janus.path}`
  const lib = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+\/.*)$/.exec(url)
  if (lib) return lib[1]!.replace(/\/dist\/(esm\/)?/, "/")
  return url === "" ? "(native)" : url
}

export const summarize = (
  profile: CpuProfile,
  window?: { readonly fromUs: number; readonly toUs: number },
  top = 15
): ProfileSummary => {
  const byId = new Map<number, ProfileNode>()
  const parent = new Map<number, number>()
  for (const node of profile.nodes) {
    byId.set(node.id, node)
    for (const child of node.children ?? []) parent.set(child, node.id)
  }
  // The innermost Janus frame above each node (memoised per node id).
  const stepMemo = new Map<number, string>()
  const stepOf = (id: number): string => {
    const cached = stepMemo.get(id)
    if (cached !== undefined) return cached
    const leaf = byId.get(id)!.callFrame
    let step: string | undefined
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const janus = janusPath(byId.get(at)!.callFrame.url)
      if (janus) {
        step = janusStep(janus.pkg, janus.path)
        break
      }
    }
    const result = step ?? `outside Janus code: ${categoryOf(leaf)}`
    stepMemo.set(id, result)
    return result
  }

  const pgliteMemo = new Map<number, boolean>()
  const underPglite = (id: number): boolean => {
    const cached = pgliteMemo.get(id)
    if (cached !== undefined) return cached
    let found = false
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const url = byId.get(at)!.callFrame.url
      if (url.startsWith("wasm://") || /@electric-sql\/pglite/.test(url)) {
        found = true
        break
      }
    }
    pgliteMemo.set(id, found)
    return found
  }
  let run = 0
  let longest = 0
  let runsOver10 = 0
  const endRun = () => {
    if (run >= 10) runsOver10++
    longest = Math.max(longest, run)
    run = 0
  }

  const self = new Map<number, number>()
  let time = profile.startTime
  let windowMs = 0
  for (let i = 0; i < profile.samples.length; i++) {
    time += profile.timeDeltas[i] ?? 0
    if (window && (time < window.fromUs || time > window.toUs)) continue
    // A sample stands for the time until the next one.
    const weight = (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0) / 1000
    windowMs += weight
    const id = profile.samples[i]!
    self.set(id, (self.get(id) ?? 0) + weight)
    if (underPglite(id)) run += weight
    else endRun()
  }
  endRun()

  const add = (map: Map<string, number>, key: string, ms: number) => map.set(key, (map.get(key) ?? 0) + ms)
  const functions = new Map<string, number>()
  const categories = new Map<string, number>()
  const steps = new Map<string, number>()
  let idleMs = 0
  for (const [id, ms] of self) {
    const frame = byId.get(id)!.callFrame
    const category = categoryOf(frame)
    if (category === "(idle)") {
      idleMs += ms
      continue
    }
    add(categories, category, ms)
    add(steps, stepOf(id), ms)
    const where = frame.url === "" ? "" : ` ${shortUrl(frame.url)}:${frame.lineNumber + 1}`
    add(functions, `${frame.functionName || "(anonymous)"}${where}`, ms)
  }
  const busyMs = windowMs - idleMs
  const shares = (map: Map<string, number>, limit = Infinity): Array<Share> =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([name, ms]) => ({ name, ms: Math.round(ms), pct: Math.round((1000 * ms) / Math.max(1, busyMs)) / 10 }))
  return {
    windowMs: Math.round(windowMs),
    busyMs: Math.round(busyMs),
    idlePct: Math.round((1000 * idleMs) / Math.max(1, windowMs)) / 10,
    topSelf: shares(functions, top),
    selfByCategory: shares(categories),
    byStep: shares(steps),
    pgliteLongestMs: Math.round(longest),
    pgliteRunsOver10Ms: runsOver10
  }
}

/** One line per share: `name 12.3%`. */
export const formatShares = (shares: ReadonlyArray<Share>, limit = Infinity): string =>
  shares.slice(0, limit).map((s) => `${s.name} ${s.pct}%`).join("; ")

if (import.meta.main) {
  const { readFileSync } = await import("node:fs")
  const [file, from, to] = process.argv.slice(2)
  if (file === undefined) throw new Error("usage: profile.ts <file.cpuprofile> [fromUs toUs]")
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile
  const summary = summarize(
    profile,
    from !== undefined && to !== undefined ? { fromUs: Number(from), toUs: Number(to) } : undefined,
    25
  )
  console.log(JSON.stringify(summary, null, 2))
}
