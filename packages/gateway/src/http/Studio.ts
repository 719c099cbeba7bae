/**
 * Studio, the admin single-page app, served at `/` from `@janus/studio`'s
 * built `dist/`.
 *
 * **Rules**
 *
 * - Every other route keeps precedence: this is the router's `/*` fallback
 *   for GET, and paths owned by the API, MCP and operations
 *   (`/api/`, `/mcp`, `/servers/`, `/sse`, `/messages`, `/metrics`,
 *   `/healthz`, `/readyz`, `/.well-known/`) are never answered with the app.
 * - A built file is served with its content type; a path without a file
 *   extension is a client route and gets `index.html` (SPA fallback); a
 *   missing file with an extension is 404.
 * - Caching: `assets/` names carry a content hash, so they are immutable for
 *   a year; `index.html` is `no-cache` so a new build is picked up at once.
 * - Every response carries a strict Content-Security-Policy (scripts and
 *   styles from this origin only, no inline script, no framing) and
 *   `nosniff`. The app fetches nothing from another origin.
 * - The files are read once at start (the build is ~120 KB); when `dist/`
 *   is missing the app's paths answer 503 saying how to build it.
 *
 * @since 0.1.0
 */
import { distDir } from "@janus/studio"
import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createHash } from "node:crypto"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { extname, join, relative, sep } from "node:path"

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'"
].join("; ")

const securityHeaders = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY"
}

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8"
}

const reserved = ["/api/", "/mcp", "/servers/", "/sse", "/messages", "/metrics", "/healthz", "/readyz", "/.well-known/"]

interface File {
  readonly body: Uint8Array
  readonly contentType: string
  readonly etag: string
  readonly cacheControl: string
}

/** Every file under `dir`, keyed by URL path (`/index.html`, `/assets/x.js`). */
export const loadDist = (dir: string): Map<string, File> | undefined => {
  if (!existsSync(join(dir, "index.html"))) return undefined
  const files = new Map<string, File>()
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const full = join(at, name)
      if (statSync(full).isDirectory()) walk(full)
      else {
        const path = `/${relative(dir, full).split(sep).join("/")}`
        const body = readFileSync(full)
        files.set(path, {
          body,
          contentType: contentTypes[extname(name)] ?? "application/octet-stream",
          etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`,
          cacheControl: path.startsWith("/assets/") ? "public, max-age=31536000, immutable" : "no-cache"
        })
      }
    }
  }
  walk(dir)
  return files
}

const notBuilt = HttpServerResponse.text(
  "Janus Studio is not built. Run `npm start` (it builds Studio when needed) or `pnpm --filter @janus/studio build`.\n",
  { status: 503, headers: { ...securityHeaders, "cache-control": "no-store" } }
)

const notFound = HttpServerResponse.text("Not found\n", {
  status: 404,
  headers: { ...securityHeaders, "cache-control": "no-store" }
})

/** The handler for `files` (or for a missing build when `undefined`). */
export const handler = (files: Map<string, File> | undefined) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
    let path: string
    try {
      path = decodeURIComponent(new URL(request.url, "http://janus").pathname)
    } catch {
      return notFound
    }
    if (reserved.some((prefix) => path === prefix.replace(/\/$/, "") || path.startsWith(prefix))) return notFound
    if (files === undefined) return notBuilt
    const file = files.get(path) ?? (extname(path) === "" ? files.get("/index.html") : undefined)
    if (file === undefined) return notFound
    const headers = {
      ...securityHeaders,
      "cache-control": file.cacheControl,
      etag: file.etag
    }
    if (request.headers["if-none-match"] === file.etag) return HttpServerResponse.empty({ status: 304, headers })
    return HttpServerResponse.uint8Array(request.method === "HEAD" ? new Uint8Array() : file.body, {
      contentType: file.contentType,
      headers
    })
  })

/** Studio at `/` from `dir` (default: `@janus/studio`'s `dist/`). */
export const routes = (dir: string = distDir) =>
  HttpRouter.use(Effect.fn(function*(router) {
    const files = loadDist(dir)
    if (files === undefined) yield* Effect.logWarning(`Studio is not built (no ${join(dir, "index.html")})`)
    yield* router.add("GET", "/*", handler(files))
  }))
