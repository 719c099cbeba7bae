/**
 * Where the built Studio lives, for the gateway to serve (`dist/`, made by
 * `vite build`; see scripts/bootstrap.sh, which builds it when missing or
 * older than its sources).
 *
 * @since 0.1.0
 */
import { fileURLToPath } from "node:url"

/** The absolute path of the built single-page app (this module runs from the package root or from `dist-js/`). */
export const distDir: string = fileURLToPath(
  new URL(import.meta.url.endsWith("/dist-js/index.js") ? "../dist" : "./dist", import.meta.url)
)
